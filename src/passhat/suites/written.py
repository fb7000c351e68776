"""Writing the case files an importer made: all of them or none.

Every importer (``passhat cases import``) builds its files in memory first; this refuses the whole import when
any of them exists already (an earlier import, or a suite of the user's), so a folder never ends up half from
one import and half from another.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from passhat.errors import CaseError


def write_new_files(pending: Sequence[tuple[Path, str]]) -> None:
    """Write each (path, text), creating folders; :class:`CaseError` naming the first that exists, before any write."""
    for path, _ in pending:
        if path.exists():
            raise CaseError(str(path), "", "already exists (from an earlier import?); import into an empty folder "
                                           "or remove it")
    for path, text in pending:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, "utf-8")
