"""Agent-supplied paths stay inside the workspace copy, whatever links its commands planted."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from passhat.workspace import WorkspaceError, WorkspacePathError, inside


@pytest.fixture
def root(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    (ws / "src").mkdir(parents=True)
    (ws / "src" / "a.py").write_text("x = 1\n")
    return ws


@pytest.mark.parametrize("rel, expected", [
    ("src/a.py", "src/a.py"),
    ("./src/a.py", "src/a.py"),
    ("src/../src/a.py", "src/a.py"),
    ("new/file.txt", "new/file.txt"),  # need not exist yet
    (".", ""),
])
def test_relative_paths_resolve_inside(root: Path, rel: str, expected: str) -> None:
    assert inside(root, rel) == (root / expected).resolve()


@pytest.mark.parametrize("rel", ["../etc/passwd", "..", "src/../../x", "a/../../ws/src/a.py"])
def test_climbing_out_by_dotdot_is_refused(root: Path, rel: str) -> None:
    with pytest.raises(WorkspacePathError, match=f"path '{rel}' is outside the workspace"):
        inside(root, rel)


def test_absolute_path_is_refused_even_inside_the_root(root: Path) -> None:
    with pytest.raises(WorkspacePathError, match="is outside the workspace: give a path relative"):
        inside(root, str(root / "src" / "a.py"))
    with pytest.raises(WorkspacePathError, match="outside the workspace"):
        inside(root, "/etc/passwd")


def test_nul_and_empty_are_refused(root: Path) -> None:
    with pytest.raises(WorkspacePathError, match="NUL byte"):
        inside(root, "src/a\x00.py")
    with pytest.raises(WorkspacePathError, match="use '.' for the workspace root"):
        inside(root, "")


def test_a_symlink_planted_in_the_copy_cannot_lead_out(root: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    os.symlink(outside, root / "link")            # as `ln -s /elsewhere link` would
    os.symlink("../../outside/f", root / "src" / "rel")  # relative, through ..
    for rel in ["link", "link/x", "src/rel", "link/../ws/src/a.py"]:
        with pytest.raises(WorkspacePathError, match="outside the workspace"):
            inside(root, rel)
    assert not (outside / "x").exists()


def test_symlinks_inside_are_followed(root: Path) -> None:
    os.symlink("src", root / "alias")
    assert inside(root, "alias/a.py") == (root / "src" / "a.py").resolve()


def test_without_following_the_last_link_names_the_link_itself(root: Path, tmp_path: Path) -> None:
    os.symlink("/etc", root / "link")
    assert inside(root, "link", follow_symlinks=False) == root.resolve() / "link"
    with pytest.raises(WorkspacePathError):
        inside(root, "link/passwd", follow_symlinks=False)


def test_path_error_is_a_workspace_error() -> None:
    assert issubclass(WorkspacePathError, WorkspaceError)
