"""Images of a git commit: the tree as committed, not the checkout."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from passhat.workspace import WorkspaceError, WorkspaceImage

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")

ENV = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t",
       "GIT_COMMITTER_EMAIL": "t@example.com", "GIT_CONFIG_NOSYSTEM": "1", "HOME": "/nonexistent"}


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], env=ENV, check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture
def repo(tmp_path: Path) -> tuple[Path, str, str]:
    """A repository with two commits; returns (path, first commit, second commit)."""
    r = tmp_path / "repo"
    r.mkdir()
    git(r, "init", "-q", "-b", "main")
    (r / "src").mkdir()
    (r / "src" / "app.py").write_text("VERSION = 1\n")
    (r / "tool.sh").write_text("#!/bin/sh\n")
    os.chmod(r / "tool.sh", 0o755)
    os.symlink("src/app.py", r / "app_link")
    (r / ".gitattributes").write_text("src/app.py export-subst\nsecret.txt export-ignore\n")
    (r / "secret.txt").write_text("kept: git archive would drop me\n")
    git(r, "add", "-A")
    git(r, "commit", "-q", "-m", "first")
    first = git(r, "rev-parse", "HEAD")
    (r / "src" / "app.py").write_text("VERSION = 2\n")
    (r / "later.txt").write_text("only in the second commit\n")
    git(r, "add", "-A")
    git(r, "commit", "-q", "-m", "second")
    return r, first, git(r, "rev-parse", "HEAD")


def test_image_of_the_first_commit(repo: tuple[Path, str, str]) -> None:
    path, first, _ = repo
    (path / "src" / "app.py").write_text("uncommitted edit\n")  # the working tree does not matter
    with WorkspaceImage.from_git(path, first) as img, img.restore() as c:
        assert sorted(img.files) == [".gitattributes", "app_link", "secret.txt", "src/app.py", "tool.sh"]
        assert (c.root / "src" / "app.py").read_text() == "VERSION = 1\n"
        assert (c.root / "secret.txt").exists()
        assert img.files["tool.sh"].executable and not img.files["src/app.py"].executable
        assert os.readlink(c.root / "app_link") == "src/app.py"
        assert not (c.root / ".git").exists()
        assert c.digest() == img.digest


def test_same_tree_as_a_folder_image_of_the_checkout(repo: tuple[Path, str, str], tmp_path: Path) -> None:
    path, _, second = repo
    git(path, "checkout", "-q", "--", ".")
    with WorkspaceImage.from_git(path, second) as from_git, WorkspaceImage.from_dir(path) as from_dir:
        assert from_git.digest == from_dir.digest  # .git is left out of the folder image


def test_short_names_and_branches_resolve(repo: tuple[Path, str, str]) -> None:
    path, first, second = repo
    with WorkspaceImage.from_git(path, first[:10]) as a, WorkspaceImage.from_git(path, "main") as b:
        assert "later.txt" not in a.files and "later.txt" in b.files


def test_unknown_commit_names_repo_and_commit(repo: tuple[Path, str, str]) -> None:
    path, _, _ = repo
    with pytest.raises(WorkspaceError, match=rf"{path}: unknown commit 'deadbeef'"):
        WorkspaceImage.from_git(path, "deadbeef")
    with pytest.raises(WorkspaceError, match="is not a commit name"):
        WorkspaceImage.from_git(path, "--output=/tmp/x")


def test_not_a_repository_is_named(tmp_path: Path) -> None:
    with pytest.raises(WorkspaceError, match=rf"{tmp_path}: not a git repository, cannot read commit 'HEAD'"):
        WorkspaceImage.from_git(tmp_path, "HEAD")
    with pytest.raises(WorkspaceError, match="git repository does not exist"):
        WorkspaceImage.from_git(tmp_path / "missing", "HEAD")


def test_git_missing_is_named(repo: tuple[Path, str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    path, first, _ = repo
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(WorkspaceError, match=rf"{path}: cannot read commit '{first}': git is not installed"):
        WorkspaceImage.from_git(path, first)


def test_symlink_out_of_the_tree_is_refused(repo: tuple[Path, str, str]) -> None:
    path, _, _ = repo
    (path / "deep").mkdir()
    os.symlink("../..", path / "deep" / "up")
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "escape")
    with pytest.raises(WorkspaceError, match=r"commit 'HEAD': symbolic link 'deep/up' points outside the tree"):
        WorkspaceImage.from_git(path, "HEAD")


def test_link_escaping_only_through_another_link_is_refused(repo: tuple[Path, str, str]) -> None:
    path, _, _ = repo
    (path / "d1" / "d2").mkdir(parents=True)
    os.symlink("../..", path / "d1" / "d2" / "s")      # d1/d2/s -> the root: inside
    os.symlink("d1/d2/s/../..", path / "a_first")      # spelled inside, resolves above the root
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "chain")
    with pytest.raises(WorkspaceError, match="symbolic link 'a_first' points outside the tree"):
        WorkspaceImage.from_git(path, "HEAD")


def test_submodule_is_refused(repo: tuple[Path, str, str]) -> None:
    path, first, _ = repo
    git(path, "update-index", "--add", "--cacheinfo", f"160000,{first},vendor/lib")
    git(path, "commit", "-q", "-m", "submodule")
    with pytest.raises(WorkspaceError, match="has a submodule at 'vendor/lib'"):
        WorkspaceImage.from_git(path, "HEAD")
