"""Images, private copies and their file diffs, on real files."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from passhat.workspace import (
    FileDiff,
    WorkspaceCopy,
    WorkspaceError,
    WorkspaceImage,
    _fs,
    apply_file_diff,
    copies,
)
from passhat.workspace.diff import MAX_KEPT_CONTENT, MAX_TEXT_DIFF

SRC = Path(__file__).resolve().parents[2] / "src"


def make_fixture(folder: Path) -> Path:
    (folder / "src" / "pkg").mkdir(parents=True)
    (folder / "src" / "pkg" / "a.py").write_text("def f():\n    return 1\n")
    (folder / "src" / "pkg" / "b.py").write_text("X = 2\n")
    (folder / "README.md").write_text("# demo\n")
    (folder / "data.bin").write_bytes(bytes(range(256)) * 4)
    (folder / "run.sh").write_text("#!/bin/sh\necho hi\n")
    os.chmod(folder / "run.sh", 0o755)
    (folder / "empty").mkdir()
    os.symlink("src/pkg/a.py", folder / "a_link")
    return folder


@pytest.fixture
def image(tmp_path: Path) -> Iterator[WorkspaceImage]:
    with WorkspaceImage.from_dir(make_fixture(tmp_path / "fixture")) as img:
        yield img


@pytest.fixture
def copy(image: WorkspaceImage) -> Iterator[WorkspaceCopy]:
    with image.restore() as c:
        yield c


def test_image_records_files_links_and_executable_bits(image: WorkspaceImage) -> None:
    files = image.files
    assert sorted(files) == ["README.md", "a_link", "data.bin", "run.sh", "src/pkg/a.py", "src/pkg/b.py"]
    assert files["run.sh"].executable and not files["README.md"].executable
    assert files["a_link"].symlink == "src/pkg/a.py"
    assert files["data.bin"].size == 1024


def test_restore_gives_the_same_tree_in_a_private_folder(image: WorkspaceImage, copy: WorkspaceCopy) -> None:
    assert copy.digest() == image.digest
    assert not copy.diff()
    assert stat.S_IMODE(os.stat(copy.root).st_mode) == 0o700
    assert (copy.root / "empty").is_dir()
    assert os.readlink(copy.root / "a_link") == "src/pkg/a.py"
    assert os.access(copy.root / "run.sh", os.X_OK)


def test_digest_ignores_location_and_times(tmp_path: Path, image: WorkspaceImage) -> None:
    elsewhere = tmp_path / "elsewhere" / "deeper"
    shutil.copytree(tmp_path / "fixture", elsewhere, symlinks=True)  # new mtimes, new folder
    for p in elsewhere.rglob("*"):
        if not p.is_symlink():
            os.utime(p, (1, 1))
    with WorkspaceImage.from_dir(elsewhere) as again:
        assert again.digest == image.digest
    (elsewhere / "README.md").write_text("# demo!\n")
    with WorkspaceImage.from_dir(elsewhere) as changed:
        assert changed.digest != image.digest


def test_every_kind_of_change_is_caught(copy: WorkspaceCopy) -> None:
    root = copy.root
    (root / "src" / "pkg" / "a.py").write_text("def f():\n    return 2\n")        # edit
    (root / "src" / "pkg" / "new.py").write_text("NEW = True\n")                  # create
    (root / "src" / "pkg" / "b.py").unlink()                                      # delete
    os.chmod(root / "README.md", 0o755)                                           # chmod +x
    os.remove(root / "a_link")
    os.symlink("README.md", root / "a_link")                                      # retarget a link
    diff = copy.diff()
    kinds = {c.path: c.kind for c in diff.changes}
    assert kinds == {"README.md": "modified", "a_link": "modified", "src/pkg/a.py": "modified",
                     "src/pkg/b.py": "removed", "src/pkg/new.py": "added"}
    assert diff.paths() == sorted(kinds)
    by = {c.path: c for c in diff.changes}
    assert by["README.md"].executable and by["README.md"].before == by["README.md"].after
    assert "new mode 100755" in (by["README.md"].text_diff or "")
    assert by["a_link"].symlink == "README.md"
    a = by["src/pkg/a.py"]
    assert a.text_diff is not None and a.text_diff.startswith("--- a/src/pkg/a.py\n+++ b/src/pkg/a.py\n")
    assert "-    return 1\n+    return 2\n" in a.text_diff
    assert a.content == "def f():\n    return 2\n" and a.content_kept
    assert by["src/pkg/new.py"].text_diff.startswith("--- /dev/null\n+++ b/src/pkg/new.py")  # type: ignore[union-attr]
    assert diff.summary() == "3 modified, 1 added, 1 removed: README.md, a_link, src/pkg/a.py, src/pkg/b.py, src/pkg/new.py"


@pytest.fixture
def trusting(monkeypatch: pytest.MonkeyPatch) -> None:
    """Trust every stat at once, as a copy older than the file clock's tick is (so the fast path is what is tested)."""
    monkeypatch.setattr(copies, "RACY_NS", 0)


def count_hashes(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    hashed: list[str] = []
    real = _fs.sha256_file

    def counting(path: str) -> str:
        hashed.append(path)
        return real(path)

    monkeypatch.setattr(_fs, "sha256_file", counting)
    return hashed


def test_unchanged_files_are_not_hashed(trusting: None, image: WorkspaceImage, monkeypatch: pytest.MonkeyPatch) -> None:
    with image.restore() as c:
        hashed = count_hashes(monkeypatch)
        assert not c.diff()
        assert hashed == []
        (c.root / "README.md").write_text("# changed\n")
        assert c.diff().paths() == ["README.md"]
        assert [os.path.basename(p) for p in hashed] == ["README.md"]


def test_files_stat_ed_within_a_clock_tick_are_hashed_until_trusted(image: WorkspaceImage,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(copies, "RACY_NS", 10**18)  # every stat is "too recent" to trust
    with image.restore() as c:
        hashed = count_hashes(monkeypatch)
        assert not c.diff()
        assert len(hashed) == sum(1 for e in image.files.values() if e.symlink is None)


@pytest.mark.parametrize("trust", [True, False])
def test_rewrite_with_same_size_and_restored_mtime_is_caught(trust: bool, image: WorkspaceImage,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    if trust:
        monkeypatch.setattr(copies, "RACY_NS", 0)
    copy = image.restore()
    path = copy.root / "src" / "pkg" / "b.py"
    before = os.stat(path)
    path.write_text("X = 3\n")  # same size
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = os.stat(path)
    assert (after.st_size, after.st_mtime_ns, after.st_ino) == (before.st_size, before.st_mtime_ns, before.st_ino)
    assert copy.diff().paths() == ["src/pkg/b.py"]
    copy.discard()


def test_replacing_a_file_by_rename_is_caught(copy: WorkspaceCopy) -> None:
    path = copy.root / "README.md"
    st = os.stat(path)
    tmp = copy.root / "tmp.md"
    tmp.write_text("# dem0\n")
    os.utime(tmp, ns=(st.st_atime_ns, st.st_mtime_ns))
    os.replace(tmp, path)
    assert copy.diff().paths() == ["README.md"]


def test_writing_back_the_same_content_is_no_change(copy: WorkspaceCopy) -> None:
    path = copy.root / "src" / "pkg" / "a.py"
    path.write_text(path.read_text())
    assert not copy.diff()
    assert copy.digest() == copy.image.digest


def test_caches_and_git_are_ignored(copy: WorkspaceCopy) -> None:
    root = copy.root
    for folder in ["__pycache__", "src/pkg/__pycache__", ".pytest_cache/v", ".mypy_cache", ".ruff_cache", ".git/objects"]:
        (root / folder).mkdir(parents=True)
        (root / folder / "junk").write_text("x")
    (root / "src" / "pkg" / "a.cpython-311.pyc").write_bytes(b"\0pyc")
    assert not copy.diff()
    assert copy.digest() == copy.image.digest


def test_ignored_names_and_git_are_left_out_of_the_image(tmp_path: Path) -> None:
    src = make_fixture(tmp_path / "fx")
    (src / "__pycache__").mkdir()
    (src / "__pycache__" / "a.pyc").write_bytes(b"\0")
    (src / ".git").mkdir()
    (src / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (src / "notes.log").write_text("log\n")
    with WorkspaceImage.from_dir(src, ignore=("*.log", "__pycache__")) as img:
        assert not any(p.startswith((".git", "__pycache__")) or p.endswith(".log") for p in img.files)
        with img.restore() as c:
            (c.root / "more.log").write_text("ignored too\n")
            assert not c.diff()


def test_the_image_does_not_follow_later_edits_of_its_source(tmp_path: Path) -> None:
    src = make_fixture(tmp_path / "fx")
    with WorkspaceImage.from_dir(src) as img:
        digest = img.digest
        (src / "README.md").write_text("changed after the snapshot\n")
        (src / "src" / "pkg" / "b.py").unlink()
        with img.restore() as c:
            assert (c.root / "README.md").read_text() == "# demo\n"
            assert (c.root / "src" / "pkg" / "b.py").exists()
            assert c.digest() == digest == img.digest
            assert not c.diff()


def test_json_round_trip_is_exact(copy: WorkspaceCopy) -> None:
    (copy.root / "src" / "pkg" / "a.py").write_text("def f():\n    return 'é'\n")
    (copy.root / "blob.bin").write_bytes(b"\0\1\2\3")
    (copy.root / "run.sh").unlink()
    diff = copy.diff()
    again = FileDiff.from_json(json.loads(json.dumps(diff.to_json())))
    assert again == diff
    assert again.to_json() == diff.to_json()


@pytest.mark.parametrize("data, message", [
    ({"changes": "no"}, "field 'changes' must be a list"),
    ({"changes": [{"path": "a"}]}, r"changes\[0\]: field '\w+' is missing"),
    ({"changes": [{"path": "a", "kind": "renamed", "before": None, "after": None, "binary": False, "text_diff": None,
                   "content": None, "content_kept": True, "executable": False}]}, r"changes\[0\]\.kind: 'renamed' is not one of"),
])
def test_from_json_names_the_bad_field(data: dict, message: str) -> None:
    with pytest.raises(WorkspaceError, match=message):
        FileDiff.from_json(data)


def test_apply_file_diff_rebuilds_the_final_tree(image: WorkspaceImage, copy: WorkspaceCopy) -> None:
    root = copy.root
    (root / "src" / "pkg" / "a.py").write_text("def f():\n    return 42\n")
    (root / "src" / "pkg" / "b.py").unlink()
    (root / "docs" / "deep").mkdir(parents=True)
    (root / "docs" / "deep" / "guide.md").write_text("# guide\n")
    os.chmod(root / "run.sh", 0o644)
    os.chmod(root / "README.md", 0o755)
    os.remove(root / "a_link")
    os.symlink("README.md", root / "a_link")
    (root / "README.md").write_text("# changed and executable\n")
    shutil.rmtree(root / "empty")
    (root / "empty").write_text("a file where a folder was\n")
    diff = copy.diff()
    final = copy.digest()
    assert final != image.digest
    with image.restore() as fresh:
        apply_file_diff(fresh, FileDiff.from_json(json.loads(json.dumps(diff.to_json()))))
        assert fresh.digest() == final
        assert fresh.diff().paths() == diff.paths()


def test_a_folder_replaced_by_a_file_re_applies(image: WorkspaceImage, copy: WorkspaceCopy) -> None:
    shutil.rmtree(copy.root / "src" / "pkg")
    (copy.root / "src" / "pkg").write_text("now a file\n")
    diff = copy.diff()
    assert diff.paths() == ["src/pkg", "src/pkg/a.py", "src/pkg/b.py"]
    with image.restore() as fresh:
        apply_file_diff(fresh, diff)
        assert fresh.digest() == copy.digest()


def test_binary_files_are_flagged_and_not_kept(image: WorkspaceImage, copy: WorkspaceCopy) -> None:
    (copy.root / "data.bin").write_bytes(b"\0" * 10)
    (copy.root / "latin1.txt").write_bytes("caf\xe9\n".encode("latin-1"))  # not UTF-8: binary for us
    diff = copy.diff()
    for change in diff.changes:
        assert change.binary and change.text_diff is None and change.content is None and not change.content_kept
    with image.restore() as fresh, pytest.raises(WorkspaceError, match="'data.bin': its new content was not kept"):
        apply_file_diff(fresh, diff)


def test_over_budget_content_is_not_kept_and_apply_refuses_naming_the_path(image: WorkspaceImage,
                                                                          copy: WorkspaceCopy) -> None:
    big = "line of text\n" * (MAX_KEPT_CONTENT // 13 + 10)
    (copy.root / "big.txt").write_text(big)
    (copy.root / "small.txt").write_text("small\n")
    diff = copy.diff()
    by = {c.path: c for c in diff.changes}
    assert not by["big.txt"].binary and by["big.txt"].content is None and not by["big.txt"].content_kept
    assert by["small.txt"].content_kept
    assert by["big.txt"].text_diff is not None
    assert len(by["big.txt"].text_diff.encode()) <= MAX_TEXT_DIFF + 100
    assert "… [truncated " in by["big.txt"].text_diff
    with image.restore() as fresh:
        with pytest.raises(WorkspaceError, match=r"cannot re-apply the change to 'big.txt': its new content was not kept"):
            apply_file_diff(fresh, diff)
        assert not (fresh.root / "small.txt").exists()  # nothing applied when anything is refused
        assert not fresh.diff()


def test_the_per_diff_content_budget_is_shared(copy: WorkspaceCopy) -> None:
    chunk = "x" * (200 * 1024) + "\n"
    for i in range(7):
        (copy.root / f"f{i}.txt").write_text(chunk)
    kept = [c.content_kept for c in copy.diff().changes]
    assert kept == [True] * 5 + [False] * 2  # 5 × 200 KiB fit in 1 MiB, in path order


def test_apply_refuses_when_the_file_before_does_not_match(image: WorkspaceImage, copy: WorkspaceCopy) -> None:
    (copy.root / "README.md").write_text("# new\n")
    (copy.root / "added.txt").write_text("a\n")
    diff = copy.diff()
    with image.restore() as other:
        (other.root / "README.md").write_text("# someone else's edit\n")
        with pytest.raises(WorkspaceError, match="'README.md': its content before the change does not match"):
            apply_file_diff(other, diff)
        assert not (other.root / "added.txt").exists()


def test_apply_refuses_paths_outside_the_copy(image: WorkspaceImage) -> None:
    evil = {"changes": [{"path": "../escape.txt", "kind": "added", "before": None, "after": "0" * 64, "binary": False,
                         "text_diff": None, "content": "x", "content_kept": True, "executable": False}]}
    with image.restore() as c, pytest.raises(WorkspaceError, match="outside the workspace"):
        apply_file_diff(c, FileDiff.from_json(evil))


def test_symlink_leading_outside_the_source_is_refused(tmp_path: Path) -> None:
    src = make_fixture(tmp_path / "fx")
    os.symlink("/etc/passwd", src / "src" / "passwd")
    with pytest.raises(WorkspaceError, match=r"fx: symbolic link 'src/passwd' points outside the tree \(to '/etc/passwd'\)"):
        WorkspaceImage.from_dir(src)


def test_absolute_symlink_inside_the_source_becomes_relative(tmp_path: Path) -> None:
    src = make_fixture(tmp_path / "fx")
    os.symlink(src / "README.md", src / "src" / "readme")
    with WorkspaceImage.from_dir(src) as img, img.restore() as c:
        assert img.files["src/readme"].symlink == "../README.md"
        assert (c.root / "src" / "readme").read_text() == "# demo\n"


def test_missing_source_is_named(tmp_path: Path) -> None:
    with pytest.raises(WorkspaceError, match="nope: workspace fixture folder does not exist"):
        WorkspaceImage.from_dir(tmp_path / "nope")


def test_close_removes_the_master_copy(tmp_path: Path) -> None:
    img = WorkspaceImage.from_dir(make_fixture(tmp_path / "fx"))
    master = img.path
    assert master.is_dir()
    img.close()
    img.close()
    assert not master.exists()
    with pytest.raises(WorkspaceError, match="is closed"):
        img.restore()


def test_discard_removes_the_copy(copy: WorkspaceCopy) -> None:
    root = copy.root
    copy.discard()
    copy.discard()
    assert not root.exists()
    with pytest.raises(WorkspaceError, match="discarded"):
        copy.diff()


DISCARD_LOCKED = textwrap.dedent("""
    import os, sys, tempfile
    from pathlib import Path
    from passhat.workspace import WorkspaceImage
    src = Path(tempfile.mkdtemp()) / "fx"
    (src / "a" / "b").mkdir(parents=True)
    (src / "a" / "b" / "f.txt").write_text("x")
    (src / "ro").mkdir()
    (src / "ro" / "g.txt").write_text("y")
    with WorkspaceImage.from_dir(src) as img:
        c = img.restore()
        root = c.root
        (root / "ro" / "made.txt").write_text("z")
        os.chmod(root / "a" / "b" / "f.txt", 0)
        os.chmod(root / "a" / "b", 0)   # unreadable, untraversable
        os.chmod(root / "ro", 0o500)    # read-only folder with files in it
        try:
            os.listdir(root / "a" / "b")
            sys.exit("permissions are not enforced for this process; the test would prove nothing")
        except PermissionError:
            pass
        c.discard()
        print("gone" if not root.exists() else "left")
""")


def test_discard_removes_folders_the_agent_locked(tmp_path: Path) -> None:
    argv = [sys.executable, "-c", DISCARD_LOCKED]
    if os.geteuid() == 0:  # root ignores permission bits; drop the capabilities that let it
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            pytest.skip("running as root and util-linux setpriv is missing: cannot drop CAP_DAC_OVERRIDE")
        argv = [setpriv, "--bounding-set=-dac_override,-dac_read_search,-fowner", *argv]
    done = subprocess.run(argv, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(SRC)}, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "gone"


def test_a_fifo_made_in_the_copy_is_reported_not_opened(copy: WorkspaceCopy) -> None:
    os.mkfifo(copy.root / "pipe")
    diff = copy.diff()
    assert diff.paths() == ["pipe"]
    assert diff.changes[0].kind == "added" and not diff.changes[0].content_kept


def test_text_that_stops_being_utf8_late_is_binary(image: WorkspaceImage, copy: WorkspaceCopy) -> None:
    (copy.root / "README.md").write_bytes(b"# demo\n" * 2000 + b"\xff\n")  # the bad byte is past the sniffed prefix
    change = copy.diff().changes[0]
    assert change.binary and change.text_diff is None and not change.content_kept


def test_file_replaced_by_a_link_whose_target_spells_its_content(image: WorkspaceImage, copy: WorkspaceCopy) -> None:
    path = copy.root / "src" / "pkg" / "b.py"
    content = path.read_text()
    path.unlink()
    os.symlink(content, path)  # a link's "content" is its target: same sha256, still a change of kind
    diff = copy.diff()
    assert diff.changes[0].symlink == content
    with image.restore() as fresh:
        apply_file_diff(fresh, diff)
        assert os.readlink(fresh.root / "src" / "pkg" / "b.py") == content
        assert fresh.digest() == copy.digest()
