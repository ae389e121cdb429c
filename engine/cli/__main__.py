"""`python -m kgfed.engine.cli ARGS` runs the `kgfed` command."""
import sys

from .app import main

sys.exit(main())
