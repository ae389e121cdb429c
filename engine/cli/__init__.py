"""The `kgfed` command: `main` parses argv and dispatches; every other module here adds
sub-commands (`register`) and turns their arguments into the library's value objects.

Started as the program (`kgfed …` or `python -m kgfed.engine.cli …`), a Ctrl-C that arrives while the
command is still being imported and parsed ends it at once with exit status 130 and one line, instead of
Python's KeyboardInterrupt traceback; `main` hands Ctrl-C to its own handling before the command runs.
"""
import os
import signal
import sys

STOPPING = "kgfed: stopping (Ctrl-C again to leave at once)…"


def _interrupted_while_starting(signum, frame) -> None:
    """Ctrl-C before the command started: nothing was done, so leave now (no cleanup is owed)."""
    try:
        os.write(2, f"{STOPPING}\nkgfed: interrupted while starting: nothing done\n".encode())
    finally:
        os._exit(130)


if os.path.basename(sys.argv[0] if sys.argv else "") in ("kgfed", "-m") and signal.getsignal(signal.SIGINT) is signal.default_int_handler:
    signal.signal(signal.SIGINT, _interrupted_while_starting)

from .app import main  # noqa: E402

__all__ = ["main"]


def __getattr__(name: str) -> object:
    """The 0.1.0 names of this module (`build_parser`, `open_kg`, …) live in `kgfed.engine.cli.app` (removed here in 0.3.0)."""
    from . import app

    hint = f" (removed in kgfed 0.3.0: import it from {__name__}.app)" if hasattr(app, name) and not name.startswith("_") else ""
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}{hint}")
