"""The C PID 1 is built once per user and source, only where nobody else can change it, and wherever it
cannot be had the sandbox still works with the Python one and says why (``PASSHAT_SANDBOX_INIT``).

A stand-in compiler (a shell script) plays the compiler: what is tested is passhat's use of it, and a real
compile per test would cost more CPU than the rest of this file."""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from passhat import sandbox
from passhat.sandbox import _init, native

FAKE_CC = """#!/bin/sh
echo "$@" >> "{log}"
[ "$1" = -dumpmachine ] && {{ echo fakearch-linux; exit 0; }}
{body}
"""
WRITES_A_PROGRAM = """while [ "$1" != -o ]; do shift; done
printf '#!/bin/sh\\nexit {code}\\n' > "$2"
"""


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A cache folder of this test's own; the process's memo of builds and probes forgotten before and after."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv(sandbox.INIT_ENV, raising=False)
    native._build.cache_clear()
    sandbox.probe.cache_clear()
    try:
        yield tmp_path / "cache" / "passhat" / "sandbox"
    finally:
        native._build.cache_clear()
        sandbox.probe.cache_clear()
        sandbox._c_probe_failure.clear()


def fake_compiler(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, body: str) -> Path:
    """``$CC`` set to a script running ``body``; returns the file where it logs every call."""
    log, script = tmp_path / "cc.log", tmp_path / "fake-cc"
    script.write_text(FAKE_CC.format(log=log, body=body))
    script.chmod(0o755)
    monkeypatch.setenv("CC", str(script))
    return log


def test_a_compile_that_fails_leaves_the_python_pid1_and_says_why(cache: Path, tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    fake_compiler(tmp_path, monkeypatch, 'echo "init.c:1: error: no such header" >&2; exit 1')
    built = native.build()
    assert built.path is None
    assert built.note.endswith("did not compile (" + str(tmp_path / "fake-cc") + ", exit 1): init.c:1: error: no such header")
    assert list(cache.iterdir()) == []  # no half-written binary left behind
    which, note = sandbox.pid1()
    assert which == "python" and "did not compile" in note
    assert "_init" in " ".join(sandbox.launch_argv(sandbox.base_spec(["true"], "/", ["/tmp"])))
    monkeypatch.setenv(sandbox.INIT_ENV, "c")
    with pytest.raises(sandbox.SandboxError, match="PASSHAT_SANDBOX_INIT=c, but the C PID 1 cannot be had: the C PID 1 "
                                                   "did not compile"):
        sandbox.pid1()


def test_no_compiler_leaves_the_python_pid1(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CC", raising=False)
    monkeypatch.setattr(native.shutil, "which", lambda name: None)
    assert sandbox.pid1() == ("python", "Python PID 1: no C compiler ($CC, cc, gcc)")


def test_it_is_built_once_into_place_named_by_source_and_target(cache: Path, tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    log = fake_compiler(tmp_path, monkeypatch, WRITES_A_PROGRAM.format(code=0))
    built = native.build()
    assert built.path is not None and Path(built.path).parent == cache
    assert re.fullmatch(r"init-[0-9a-f]{16}-fakearch-linux", Path(built.path).name)
    assert stat.S_IMODE(os.stat(built.path).st_mode) == 0o755 and stat.S_IMODE(os.stat(cache).st_mode) == 0o700
    assert os.listdir(cache) == [Path(built.path).name]  # written under another name, then renamed
    assert sandbox.pid1() == ("c", built.note)
    native._build.cache_clear()  # another process: finds it, compiles nothing
    assert native.build() == built
    assert log.read_text().count(" -o ") == 1


def test_a_binary_others_could_change_is_built_again(cache: Path, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    log = fake_compiler(tmp_path, monkeypatch, WRITES_A_PROGRAM.format(code=0))
    path = native.build().path
    assert path is not None
    os.chmod(path, 0o777)
    native._build.cache_clear()
    assert native.build().path == path
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o755 and log.read_text().count(" -o ") == 2


def test_a_cache_folder_others_can_write_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)  # and no sticky bit: anyone could swap our folder for theirs
    monkeypatch.setenv("XDG_CACHE_HOME", str(shared))
    log = fake_compiler(tmp_path, monkeypatch, WRITES_A_PROGRAM.format(code=0))
    native._build.cache_clear()
    try:
        built = native.build()
    finally:
        native._build.cache_clear()
    assert built.path is None and f"{shared}, above" in built.note and "can be changed by another user" in built.note
    assert " -o " not in log.read_text()


@pytest.mark.skipif(sandbox.available() != "unshare", reason=f"no namespaces: {sandbox.available_note()}")
def test_a_c_pid1_that_fails_the_probe_is_not_used(cache: Path, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    fake_compiler(tmp_path, monkeypatch, WRITES_A_PROGRAM.format(code=1))  # compiles, then fails every sandbox
    assert sandbox.available() == "unshare"  # through the Python PID 1
    which, note = sandbox.pid1()
    assert which == "python" and note.startswith("Python PID 1: the C PID 1 failed the probe: unshare sandbox failed")
    assert note in sandbox.available_note()


def test_both_pid1s_read_the_same_steps() -> None:
    """init.c's table of steps and arities is the Python PID 1's (``loopback``, the one without arguments,
    is read apart in C)."""
    source = native.SOURCE.read_text()
    table = dict(re.findall(r'\{"(\w+)", (\d), offsetof', source))
    assert {k: int(v) for k, v in table.items()} == {k: v for k, v in _init.STEPS.items() if k != "loopback"}
    assert 'strcmp(argv[i], "loopback")' in source


def test_a_bad_choice_of_pid1_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(sandbox.INIT_ENV, "rust")
    with pytest.raises(sandbox.SandboxError, match="PASSHAT_SANDBOX_INIT='rust' is not one of auto, c, python"):
        sandbox.pid1()
