"""Reading files that come from outside — production traces, outcome logs, case files, a τ-bench checkout —
within bounds, so a malformed, huge, deeply nested or special file is a one-line error, never a hang, a
``MemoryError`` or a traceback (docs/design/022-bounded-trials-and-inputs.md).

- **Regular files only.** A FIFO blocks the reader for ever, ``/dev/zero`` never ends, a directory cannot be
  read: the file is opened non-blocking and checked with ``fstat`` before a byte is read (no race between a
  check and the open).
- **A size cap**, :data:`MAX_INPUT_BYTES`, checked against the size on disk and again while reading (a file
  that grows meanwhile), and for compressed input on the decompressed bytes (:class:`Capped`).
- **A nesting cap**, :data:`MAX_DEPTH`, checked on parsed data without recursion (:func:`check_depth`): the
  parsers' own limit is the interpreter's recursion limit, reached as a ``RecursionError`` inside them or in
  whatever walks the data next.
"""

from __future__ import annotations

import io
import os
import stat
from pathlib import Path
from typing import Any

from passhat.errors import PasshatError

MAX_INPUT_BYTES = 64 * 1024 * 1024
"""The largest input file read (64 MB): a day of traces or outcome records of a busy service is far less;
more is split into several files (the commands take several)."""
MAX_DEPTH = 100
"""The deepest nesting of lists and mappings in an input: real traces and cases nest a dozen levels."""


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a named pipe (FIFO)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def special_kind(path: Path) -> str:
    """What ``path`` is when it is not a regular file ("a named pipe (FIFO)", "a socket", …), for a message."""
    return _kind(os.stat(path).st_mode)


def open_regular(path: Path, what: str = "input") -> int:
    """A descriptor of ``path`` opened for reading, if it is a regular file; else a :class:`PasshatError`
    naming it and what it is. Opened without blocking, so a named pipe is refused at once instead of
    waiting for a writer for ever; ``what`` says what the file was meant to be, for the message."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except IsADirectoryError:
        raise PasshatError(f"{path}: is a directory; expected a regular file ({what})") from None
    except OSError as exc:
        raise PasshatError(f"{path}: cannot read: {exc.strerror or exc}") from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise PasshatError(f"{path}: is {_kind(mode)}; expected a regular file ({what})")
        os.set_blocking(fd, True)
        return fd
    except BaseException:
        os.close(fd)
        raise


def open_input(path: Path, what: str = "input") -> io.BufferedReader:
    """``path`` opened for binary reading, if it is a regular file (:func:`open_regular`) within
    :data:`MAX_INPUT_BYTES`; else a :class:`PasshatError` naming it."""
    fd = open_regular(path, what)
    try:
        size = os.fstat(fd).st_size
        if size > MAX_INPUT_BYTES:
            raise PasshatError(f"{path}: {size:,} bytes is past the {MAX_INPUT_BYTES // (1024 * 1024)} MB limit "
                            f"on one file ({what}); split it into smaller files")
        return io.BufferedReader(Capped(io.FileIO(fd, "rb", closefd=True), path, what))
    except BaseException:
        os.close(fd)
        raise


def read_input(path: Path, what: str = "input") -> bytes:
    """The bytes of ``path`` under :func:`open_input`'s rules."""
    with open_input(path, what) as fh:
        return fh.read()


def read_input_text(path: Path, what: str = "input") -> str:
    """The UTF-8 text of ``path`` under :func:`open_input`'s rules (a byte-order mark, which spreadsheets
    write, is dropped); text that is not UTF-8 is refused naming its line."""
    raw = read_input(path, what)
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[:exc.start].count(b"\n") + 1
        raise PasshatError(f"{path}:{line}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None


class Capped(io.RawIOBase):
    """A binary stream that raises :class:`PasshatError` once more than :data:`MAX_INPUT_BYTES` came through it
    (a file growing while read, or the output of a decompressor: a small gzip file can inflate to gigabytes)."""

    def __init__(self, raw: Any, path: Path, what: str) -> None:
        self.raw, self.path, self.what, self.seen = raw, path, what, 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        n = self.raw.readinto(buffer)
        self.seen += n or 0
        if self.seen > MAX_INPUT_BYTES:
            raise PasshatError(f"{self.path}: more than {MAX_INPUT_BYTES // (1024 * 1024)} MB of {self.what} data "
                            "(read so far); split it into smaller files")
        return n  # type: ignore[no-any-return]

    def close(self) -> None:
        self.raw.close()
        super().close()


def check_depth(data: Any, where: str, limit: int | None = None) -> None:
    """Refuse parsed data nested deeper than ``limit`` (default :data:`MAX_DEPTH`) lists and mappings,
    without recursing (so the check cannot itself overflow the stack)."""
    limit = MAX_DEPTH if limit is None else limit
    stack: list[tuple[Any, int]] = [(data, 1)]
    seen: set[int] = set()  # a container shared by reference (a YAML alias) is walked once, not once per use
    while stack:
        value, depth = stack.pop()
        if id(value) in seen:
            continue
        seen.add(id(value))
        if isinstance(value, dict):
            children: Any = value.values()
        elif isinstance(value, list | tuple):
            children = value
        else:
            continue
        if depth > limit:
            raise PasshatError(f"{where}: nested more than {limit} levels deep (real data nests a dozen); not read")
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list | tuple))


def too_deep(where: str) -> PasshatError:
    """The error for input whose parser ran out of stack (``RecursionError`` inside ``json``, ``yaml``, ``ast``)."""
    return PasshatError(f"{where}: nested too deeply to parse (more than {MAX_DEPTH} levels is not real data)")


__all__ = ["MAX_DEPTH", "MAX_INPUT_BYTES", "Capped", "check_depth", "loads_nested", "open_input", "read_input", "read_input_text",
           "open_regular", "special_kind", "too_deep"]


def _not_json(word: str) -> Any:
    """Python's JSON reader takes ``NaN`` and ``Infinity``; JSON has neither (a value holding one would be written
    back as ``null``, or as a word no other reader takes)."""
    raise ValueError(f"{word} is not a JSON number")


def loads_nested(text: str, where: str) -> Any:
    """``json.loads`` of a JSON text found inside an input (an attribute, an arguments string), within
    :data:`MAX_DEPTH`: a :class:`PasshatError` naming ``where`` when it nests too deep. Malformed JSON still
    raises ``json.JSONDecodeError`` (the callers keep such text as text), and so does an integer of more
    digits than Python converts (``json.loads`` raises a bare ``ValueError`` for it), and ``NaN`` or ``Infinity``."""
    import json

    try:
        value = json.loads(text, parse_constant=_not_json)
    except RecursionError:
        raise too_deep(where) from None
    except json.JSONDecodeError:
        raise
    except ValueError as exc:  # an integer past Python's 4,300 digits, or NaN: malformed here too, kept as text by callers
        raise json.JSONDecodeError(str(exc).partition(":")[0], text, 0) from None
    check_depth(value, where)
    return value
