"""A one-case suite on the notes test domain (tests/data/notes), for tests of what a case file may say."""

from __future__ import annotations

import shutil
from pathlib import Path

NOTES = Path(__file__).parents[1] / "data" / "notes"
GOOD = (NOTES / "cases" / "add-note.yaml").read_text()
"""The notes domain's add-note case, which loads and passes."""


def notes_suite(tmp_path: Path, text: str) -> Path:
    """A folder of one case file, ``case.yaml`` holding ``text``, beside the notes domain and its fixture."""
    folder = tmp_path / "notes"
    folder.mkdir()
    shutil.copy(NOTES / "domain.py", tmp_path / "domain.py")
    shutil.copy(NOTES / "fixture.yaml", tmp_path / "fixture.yaml")
    (folder / "case.yaml").write_text(text)
    return folder
