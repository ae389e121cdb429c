"""Files a long job writes and resumes from: whole lines only, atomic replaces, disk errors in one line.

`kgfed run` and `kgfed extract` both keep a journal (one JSON record or N-Triples line per finished
unit, appended as it finishes) and write their final files at the end. A disk that fills up (ENOSPC),
a read-only directory or a `kill -9` can stop a write in the middle of a line; everything here keeps
that from reaching a result:

- `drop_partial_line(path, is_line)`: on resume, cut a last line left unfinished (said on stderr), so the
  next appended line never joins a torn one, and only in a file kgfed recognises as its own: with
  `is_line`, a file one of whose whole lines it rejects is refused (`check_lines`) and left as it is;
- `LineLog`: appends whole lines; a write that fails is cut back to where it started (truncating a
  file needs no free space), so a journal holds whole lines even after ENOSPC;
- `atomic_write(path, text)`: a temporary file, then `os.replace`; a failure removes the temporary
  file and leaves the old file as it was;
- `DiskError`: a `KgfedError` naming the file, the reason (`No space left on device`) and the fix.
"""
from __future__ import annotations

import errno
import os
import sys
from collections.abc import Callable
from pathlib import Path

from ...sparql.errors import KgfedError


class DiskError(KgfedError):
    """A file could not be written (full disk, read-only or unwritable directory): one line with the fix."""


FIX = "free space or choose another --out"
_NOT_WRITABLE = (errno.EROFS, errno.EACCES, errno.EPERM)


def disk_error(exc: OSError, path: str | os.PathLike, fix: str = FIX) -> DiskError:
    """The one-line `DiskError` for an `OSError` met while writing `path` (a read-only or forbidden
    place gets "choose a writable --out" instead of the default fix)."""
    reason = exc.strerror or str(exc) or exc.__class__.__name__
    if fix == FIX and exc.errno in _NOT_WRITABLE:
        fix = "choose a writable --out"
    return DiskError(f"cannot write {path} ({reason}): {fix}")


def check_lines(path: str | os.PathLike, is_line: Callable[[str], bool], what: str, option: str = "--out",
                torn_ok: bool = True) -> None:
    """Refuse (one line, nothing written) an existing file that is not `what`: not UTF-8, or a line `is_line`
    rejects. An absent or empty file passes; with `torn_ok` (a journal) the last line may be unfinished."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return
    except OSError as exc:
        raise KgfedError(f"cannot read {path} ({exc.strerror or exc}): choose another {option}") from None
    try:
        lines = data.decode("utf-8").split("\n")
        lines = lines[:-1] if torn_ok or not lines[-1] else lines
    except UnicodeDecodeError:
        lines = None
    bad = "it is binary, not UTF-8" if lines is None else next(
        (f"line {n} is not one" for n, line in enumerate(lines, 1) if not is_line(line)), None)
    if bad:
        raise KgfedError(f"{path} is not {what} kgfed wrote ({bad}): choose another {option}; the file is left as it is")


def drop_partial_line(path: str | os.PathLike, is_line: Callable[[str], bool] | None = None, what: str = "a journal") -> int:
    """Cut a last line left unfinished by a killed run or a full disk (whole lines are written, but a
    kill -9 or ENOSPC can stop one midway); returns the bytes dropped (0 when the file ends whole). With
    `is_line`, only in a file whose whole lines it accepts (else `check_lines` refuses, nothing cut)."""
    path = Path(path)
    if is_line is not None:
        check_lines(path, is_line, what)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return 0
    if not data or data.endswith(b"\n"):
        return 0
    cut = data.rfind(b"\n") + 1
    print(f"kgfed: warning: {path}: dropping an unfinished last line (it is redone)", file=sys.stderr)
    try:
        with open(path, "r+b") as fh:
            fh.truncate(cut)
    except OSError as exc:
        raise disk_error(exc, path) from None
    return len(data) - cut


def atomic_write(path: str | os.PathLike, text: str, fix: str = FIX) -> None:
    """Replace `path` by `text` at once (a temporary file, then `os.replace`); on failure the old file stays."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise disk_error(exc, path, fix) from None


class LineLog:
    """An append-only file of whole lines: `append(text)` writes it all or, on failure, nothing.

    Written with `os.write` on an unbuffered descriptor (no buffer left to flush at close); a write
    that fails midway (ENOSPC after part of the text went to disk) is cut back with `ftruncate`.
    """

    def __init__(self, path: str | os.PathLike, fix: str = FIX, is_line: Callable[[str], bool] | None = None,
                 what: str = "a journal"):
        self.path = Path(path)
        self.fix = fix
        drop_partial_line(self.path, is_line, what)
        try:
            self._fd: int | None = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        except OSError as exc:
            raise disk_error(exc, self.path, fix) from None

    def append(self, text: str) -> None:
        """Append `text` (whole lines, ending in a newline) or nothing; a failure raises `DiskError`."""
        if self._fd is None:
            raise KgfedError(f"{self.path} is closed")
        data = memoryview(text.encode("utf-8"))
        start = os.fstat(self._fd).st_size
        try:
            while data:
                written = os.write(self._fd, data)
                data = data[written:]
        except OSError as exc:
            try:
                os.ftruncate(self._fd, start)
            except OSError:  # the next resume cuts the torn line instead (drop_partial_line)
                pass
            raise disk_error(exc, self.path, self.fix) from None

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
