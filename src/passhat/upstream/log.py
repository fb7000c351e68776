"""What a trial's record keeps of each upstream server: its stderr (bounded) and what went wrong."""

from __future__ import annotations

import os
from typing import IO

from pydantic import BaseModel, ConfigDict, Field

import passhat._docstrings  # noqa: F401  (field docstrings read once per module: before the models)

STDERR_KEPT = 16 * 1024
"""Characters of a server's stderr kept per trial: the first and last halves when it wrote more (start-up
errors are at the start, the crash that ended it at the end)."""


class UpstreamLog(BaseModel):
    """One upstream server of one trial, as the record keeps it."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    server: str
    """The upstream's name (``Upstream(name=...)``, or its command's)."""
    target: str
    """The command or URL as started for this trial (placeholders filled)."""
    start_ms: float = 0.0
    """From starting the process to the end of ``initialize`` and ``tools/list``."""
    stderr: str = ""
    """What it wrote on stderr (an HTTP server's stdout too), at most ``STDERR_KEPT`` characters."""
    stderr_bytes: int = 0
    """How much it wrote in all."""
    problems: list[str] = Field(default_factory=list)
    """What it sent that is not MCP: lines on stdout that are not JSON-RPC, ... (the first 20)."""
    shared_stderr: str | None = None
    """A server shared by the run's trials (``Upstream(shared=True)``): the file its stderr goes to."""
    failed_to_start: str | None = None
    """Why it did not start, when it did not (the trial is then an infrastructure error)."""


def bounded_text(file: IO[str], limit: int = STDERR_KEPT) -> str:
    """The text of ``file`` (read from its start), or its first and last ``limit // 2`` characters with a
    note of what was left out between them."""
    file.seek(0, os.SEEK_END)
    size = file.tell()
    file.seek(0)
    if size <= limit:
        return file.read()
    half = limit // 2
    head = file.read(half)
    file.seek(max(0, size - half))
    tail = file.read()
    return f"{head}\n… {size - len(head) - len(tail)} characters left out …\n{tail}"
