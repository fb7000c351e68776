"""Overlays: one folder laid over another, for variants of a tree without copying it."""

from __future__ import annotations

from pathlib import Path

import pytest

from passhat.workspace import WorkspaceError, WorkspaceImage


def _tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def test_an_overlay_replaces_and_adds_files_and_the_digest_is_the_trees(tmp_path: Path) -> None:
    base = _tree(tmp_path / "base", {"src/a.py": "a = 1\n", "src/b.py": "b = 1\n", "README": "r\n"})
    over = _tree(tmp_path / "over", {"src/a.py": "a = 2\n", "src/new.py": "n\n"})
    merged = _tree(tmp_path / "merged", {"src/a.py": "a = 2\n", "src/b.py": "b = 1\n", "README": "r\n", "src/new.py": "n\n"})
    with WorkspaceImage.from_dir(base, overlays=[over]) as layered, WorkspaceImage.from_dir(merged) as plain:
        assert layered.digest == plain.digest  # the same tree, however it was put together
        copy = layered.restore()
        try:
            assert (copy.root / "src/a.py").read_text() == "a = 2\n"
            assert not copy.diff()
        finally:
            copy.discard()


@pytest.mark.parametrize("base_files, over_files, message", [
    ({"src/a.py": "x"}, {"src/a.py/inner": "y"}, "is a folder, but a layer below has a file there"),
    ({"src/a/inner.py": "x"}, {"src/a": "y"}, "is a file, but a layer below has a folder there"),
])
def test_a_file_over_a_folder_is_refused(tmp_path: Path, base_files: dict[str, str], over_files: dict[str, str],
                                         message: str) -> None:
    base, over = _tree(tmp_path / "base", base_files), _tree(tmp_path / "over", over_files)
    with pytest.raises(WorkspaceError) as err:
        WorkspaceImage.from_dir(base, overlays=[over])
    assert message in str(err.value) and str(over) in str(err.value)
