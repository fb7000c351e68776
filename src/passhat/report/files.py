"""Writing report files whole or not at all.

A report is written at the end of a run, maybe onto a disk that is filling up, maybe by a process
that gets killed. A reader (a person, CI, ``passhat view``) must then see the previous file or the new
one, never half of one: every file is written to a temporary name in the same folder, flushed to disk
and renamed over the old one (``os.replace`` is atomic on one file system). A failed write removes its
temporary file and raises.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def write_atomic(path: Path, data: str | bytes) -> None:
    """Replace ``path`` with ``data`` (text is written as UTF-8) in one step."""
    path = Path(path)
    payload = data.encode("utf-8") if isinstance(data, str) else data
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(payload)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
