"""The `kgfed` command: `main` parses argv and dispatches; every other module here adds
sub-commands (`register`) and turns their arguments into the library's value objects."""
from .app import main

__all__ = ["main"]
