"""Writing report files whole or not at all.

A report is written at the end of a run, maybe onto a disk that is filling up, maybe by a process
that gets killed. A reader (a person, CI, ``passhat view``) must then see the previous file or the new
one, never half of one: every file is written to a temporary name in the same folder, flushed to disk
and renamed over the old one (``os.replace`` is atomic on one file system). A failed write removes its
temporary file and raises.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path


def write_atomic(path: Path, data: str | bytes) -> None:
    """Replace ``path`` with ``data`` (text is written as UTF-8) in one step.

    The file gets the mode any other file of the run gets (0666 less the umask, as ``open`` creates it):
    ``mkstemp``'s private 0600 made ``report.html`` unreadable to the web server or colleague that could
    read ``trials.jsonl`` beside it.
    """
    path = Path(path)
    payload = data.encode("utf-8") if isinstance(data, str) else data
    fd, tmp = _temporary(path)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(payload)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _temporary(path: Path) -> tuple[int, str]:
    """A new file beside ``path`` (a unique hidden name, created exclusively, mode 0666 less the umask)."""
    for _ in range(100):
        tmp = os.path.join(path.parent, f".{path.name}.{secrets.token_hex(6)}.tmp")
        try:
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666), tmp
        except FileExistsError:
            continue
    raise FileExistsError(f"{path.parent}: cannot find a free temporary name for {path.name}")
