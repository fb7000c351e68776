"""Where a throwaway PostgreSQL cluster lives: in RAM where there is room (a trial's database is ~300 files
made and deleted, which ext4 without a journal makes 10-20x dearer), on disk otherwise, where
``PASSHAT_PG_DIR`` says when it is set; and a clone that does not fit in RAM says what to do."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from types import SimpleNamespace

import pytest

from passhat.worlds import ram
from passhat.worlds.postgres import cluster
from passhat.worlds.postgres.slots import _out_of_room

FULL = OSError('could not write to file "base/1/2": No space left on device')


def test_the_folder_named_by_the_environment_wins(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(cluster.DIR_ENV, str(tmp_path))
    assert cluster.cluster_parent() == str(tmp_path)


@pytest.mark.skipif(not ram.in_ram("/dev/shm"), reason="no tmpfs at /dev/shm here")
def test_ram_when_it_has_room_else_the_temporary_folder(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(cluster.DIR_ENV, raising=False)
    free = os.statvfs("/dev/shm")
    room = free.f_bavail * free.f_frsize
    monkeypatch.setattr(cluster, "RAM_MIN_FREE", room // 2)
    assert cluster.cluster_parent() == "/dev/shm"
    monkeypatch.setattr(cluster, "RAM_MIN_FREE", room * 2)
    assert cluster.cluster_parent() == tempfile.gettempdir()


def test_not_a_tmpfs_is_not_ram(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(cluster.DIR_ENV, raising=False)
    monkeypatch.setattr(ram, "in_ram", lambda path: False)
    assert ram.ram_with_room(0) is None
    assert cluster.cluster_parent() == tempfile.gettempdir()


def test_the_mount_holding_a_path_decides_what_it_is() -> None:
    assert ram.in_ram("/proc") is False  # proc, not tmpfs
    if ram.in_ram("/dev/shm"):
        assert ram.in_ram("/dev/shm/a/folder/not/made") is True  # the longest mount point above it


def test_a_clone_that_does_not_fit_in_ram_names_the_way_out(monkeypatch: pytest.MonkeyPatch) -> None:
    server = SimpleNamespace(cluster=SimpleNamespace(root=Path("/somewhere/passhat-pg-x")))
    monkeypatch.setattr(ram, "in_ram", lambda path: True)
    said = _out_of_room(server, FULL)  # type: ignore[arg-type]
    assert isinstance(said, cluster.PostgresUnavailable)
    assert "PASSHAT_PG_DIR" in str(said) and "RAM" in str(said) and "No space left" in str(said)
    assert _out_of_room(server, OSError("permission denied")) is None  # type: ignore[arg-type]
    assert _out_of_room(SimpleNamespace(cluster=None), FULL) is None  # type: ignore[arg-type]
    monkeypatch.setattr(ram, "in_ram", lambda path: False)
    assert _out_of_room(server, FULL) is None  # type: ignore[arg-type]  # on disk: PostgreSQL's own words
