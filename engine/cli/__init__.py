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

# names the 0.1.0 module `kgfed.engine.cli` offered besides `main`; they live in `kgfed.engine.cli.app` now
_MOVED_TO_APP = frozenset((
    "FRACTIONS", "Handler", "KgfedParser", "LOADING_TEXT", "PARTIAL_EXIT", "PORTS", "Spinner", "ZERO_ALLOWED",
    "add_cache_options", "add_source_options", "build_parser", "cache_options", "cmd_demo", "cmd_labels",
    "cmd_neighbors", "cmd_query", "cmd_relations", "cmd_search", "configure_logging", "emit", "empty_hint",
    "fraction", "http_options", "nonnegative_int", "open_client", "open_kg", "partial_rows", "port",
    "positive_float", "positive_int", "warn_unknown"))


def __getattr__(name: str):
    """`from kgfed.engine.cli import build_parser` (0.1.0): the object, with a DeprecationWarning (PEP 562)."""
    if name not in _MOVED_TO_APP:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import warnings

    from . import app

    warnings.warn(f"{__name__}.{name} moved to {__name__}.app.{name} in kgfed 0.2.0: import it from {__name__}.app; "
                  "the old path goes away in kgfed 0.3.0", DeprecationWarning, stacklevel=2)
    return getattr(app, name)
