"""Everything read from outside is bounded (issue 25, item 5): `shadow`, `canary`, `cases import --format
tau-bench`, `cases expected` and the readers of a run folder meet malformed, huge, deeply nested and
special-file input with a one-line error and exit 2 — never a traceback (exit 70), a `MemoryError` or a hang.

The committed corpora (tests/data/fuzz/) hold small malformed files; the rest is generated here: a FIFO,
`/dev/zero`, a directory, a sparse file past the size cap, nesting past the depth cap, a gzip bomb.
Each input runs in-process (CliRunner) under a time guard.
"""

from __future__ import annotations

import gzip
import os
import shutil
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from passhat import inputs
from passhat.cli import main
from tests.tau_bench.conftest import write_checkout

DATA = Path(__file__).parents[1] / "data"
FUZZ = DATA / "fuzz"
NOTES = DATA / "notes"
GUARD_S = 30.0
"""An input not answered in this long has hung (each one takes milliseconds)."""
GOOD_OUTCOMES = b'{"version": "v1", "outcome": "success", "latency_s": 1.0}\n' * 3


def invoke(args: list[str]) -> Result:
    """``passhat ARGS`` in-process; fails the test if it does not return within :data:`GUARD_S`."""
    box: list[Result] = []
    worker = threading.Thread(target=lambda: box.append(CliRunner().invoke(main, args)), daemon=True)
    worker.start()
    worker.join(GUARD_S)
    assert box, f"hung: passhat {' '.join(args)}"
    return box[0]


def assert_refused(result: Result, args: list[str]) -> None:
    shown = f"passhat {' '.join(args)} →\n{result.output}"
    assert result.exit_code == 2, shown
    assert "Traceback" not in result.output and not isinstance(result.exception, MemoryError | RecursionError), shown
    problem = [line for line in result.output.splitlines() if line.strip()]
    assert problem, shown


@pytest.fixture(autouse=True)
def small_caps(monkeypatch: pytest.MonkeyPatch) -> None:
    """A 1 MB size cap: the sparse 'huge' file costs no disk and the gzip bomb little CPU."""
    monkeypatch.setattr(inputs, "MAX_INPUT_BYTES", 1 << 20)


def special_files(tmp_path: Path, name: str) -> dict[str, Path]:
    """The generated inputs every reader must refuse, as files called ``name``."""
    made: dict[str, Path] = {}
    fifo = tmp_path / "fifo" / name
    fifo.parent.mkdir()
    os.mkfifo(fifo)
    made["fifo"] = fifo
    made["dev_zero"] = Path("/dev/zero")
    folder = tmp_path / "folder" / name
    folder.mkdir(parents=True)
    made["directory"] = folder
    huge = tmp_path / "huge" / name
    huge.parent.mkdir()
    with huge.open("wb") as fh:
        fh.truncate(2 << 20)  # sparse: past the cap, no disk used
    made["huge"] = huge
    deep = tmp_path / "deep" / name
    deep.parent.mkdir()
    deep.write_text("[" * 100_000 + "]" * 100_000 + "\n")
    made["deep"] = deep
    nested = tmp_path / "nested" / name
    nested.parent.mkdir()
    nested.write_text('{"a": ' * 150 + "1" + "}" * 150 + "\n")  # parses, and nests past the cap
    made["nested"] = nested
    return made


def corpus(kind: str) -> list[Path]:
    return sorted((FUZZ / kind).iterdir())


def test_canary_refuses_every_bad_input(tmp_path: Path) -> None:
    good = tmp_path / "good.jsonl"
    good.write_bytes(GOOD_OUTCOMES)
    bad = [*corpus("canary"), *special_files(tmp_path, "outcomes.jsonl").values()]
    assert len(bad) >= 15
    for path in bad:
        for args in (["canary", str(good), str(path)], ["canary", str(path), str(good)]):
            assert_refused(invoke(args), args)


def test_shadow_refuses_every_bad_trace(tmp_path: Path) -> None:
    bomb = tmp_path / "bomb.jsonl.gz"
    with gzip.open(bomb, "wb") as fh:  # 4 MB of one line inflated from a few KB: past the (test's) 1 MB cap
        fh.write(b'{"id": "' + b"x" * (4 << 20) + b'"}\n')
    bad = [*corpus("shadow"), *special_files(tmp_path, "traces.jsonl").values(), bomb]
    assert len(bad) >= 15
    for path in bad:
        args = ["shadow", "run", str(path), "--agent", f"{NOTES / 'agents.py'}:good", "--domain",
                str(NOTES / "domain.py"), "--out", str(tmp_path / "out"), "-q"]
        assert_refused(invoke(args), args)


def test_cases_expected_refuses_every_bad_case_file(tmp_path: Path) -> None:
    inputs_: list[tuple[str, Path]] = []
    for i, path in enumerate(corpus("cases")):
        suite = tmp_path / f"suite{i}"
        suite.mkdir()
        raw = path.read_bytes().replace(b"DOMAIN", str(NOTES / "domain.py").encode())
        (suite / path.name).write_bytes(raw)
        inputs_.append(("fuzz", suite))
    for name, path in special_files(tmp_path, "c.yaml").items():
        if name in ("deep", "nested", "huge"):  # as a case file in a suite folder
            suite = tmp_path / f"suite-{name}"
            suite.mkdir()
            shutil.copy(path, suite / "c.yaml") if name != "huge" else os.link(path, suite / "c.yaml")
            inputs_.append(("fuzz", suite))
        else:  # as the SUITE argument itself
            inputs_.append(("fuzz", path))
    assert len(inputs_) >= 13
    for case_id, suite in inputs_:
        args = ["cases", "expected", str(suite), case_id]
        assert_refused(invoke(args), args)


def mutations(tmp_path: Path) -> list[tuple[str, Callable[[Path], None]]]:
    """Ways to break a τ-bench checkout: each takes the checkout's retail folder and breaks one file."""

    def tasks_from(source: Path) -> Callable[[Path], None]:
        return lambda retail: shutil.copy(source, retail / "tasks_test.py")

    def data_from(source: Path) -> Callable[[Path], None]:
        return lambda retail: shutil.copy(source, retail / "data" / "users.json")

    def special(target: str, how: str) -> Callable[[Path], None]:
        def apply(retail: Path) -> None:
            path = retail / target
            path.unlink()
            if how == "fifo":
                os.mkfifo(path)
            elif how == "dev_zero":
                path.symlink_to("/dev/zero")
            elif how == "directory":
                path.mkdir()
            elif how == "huge":
                with path.open("wb") as fh:
                    fh.truncate(2 << 20)
            elif how == "deep":
                path.write_text("TASKS_TEST = " + "[" * 5000 + "]" * 5000 + "\n" if target.endswith(".py")
                                else "[" * 100_000 + "]" * 100_000)
        return apply

    out: list[tuple[str, Callable[[Path], None]]] = []
    for source in corpus("tau_bench"):
        out.append((source.name, data_from(source) if source.suffix == ".json" else tasks_from(source)))
    for target in ("tasks_test.py", "data/users.json", "wiki.md"):
        for how in ("fifo", "dev_zero", "directory", "huge", "deep"):
            if target == "wiki.md" and how == "deep":
                continue
            out.append((f"{target} as {how}", special(target, how)))
    return out


def test_tau_bench_import_refuses_every_broken_checkout(tmp_path: Path) -> None:
    cases = mutations(tmp_path)
    assert len(cases) >= 20
    for i, (name, breaks) in enumerate(cases):
        checkout = write_checkout(tmp_path / f"checkout{i}", airline=False)
        breaks(checkout / "tau_bench" / "envs" / "retail")
        args = ["cases", "import", "--format", "tau-bench", str(checkout), "--out", str(tmp_path / f"out{i}")]
        result = invoke(args)
        assert_refused(result, [*args, f"({name})"])
        assert not (tmp_path / f"out{i}").exists()  # nothing written on error



@pytest.mark.parametrize("name", ["manifest.json", "trials.jsonl", "summary.json"])
@pytest.mark.parametrize("how", ["fifo", "dev_zero"])
def test_a_run_folder_file_that_is_not_a_file_is_refused(run_notes: Callable[..., Path], tmp_path: Path, name: str,
                                                         how: str) -> None:
    # a named pipe blocked every reader of the folder for ever (`passhat show` hung); /dev/zero never ends
    run = run_notes("good", trials=1)
    path = run / name
    path.unlink(missing_ok=True)  # a run through the library writes no summary.json
    os.mkfifo(path) if how == "fifo" else path.symlink_to("/dev/zero")
    for args in (["show", str(run)], ["report", str(run)], ["compare", str(run), str(run)]):
        result = invoke(args)
        assert_refused(result, args)
        assert f"{path}: is a" in result.output and "a run folder holds regular files" in result.output


def test_gate_refuses_every_bad_gate_file_and_rule_file(run_notes: Callable[..., Path], tmp_path: Path) -> None:
    # a named pipe as the gate file (or as a judge_agreement calibration file) blocked `passhat gate` and
    # `passhat run --gate` for ever, and /dev/zero was read until memory ran out
    run = run_notes("good", trials=1)
    bad = special_files(tmp_path, "gate.yaml")
    for name in ("fifo", "dev_zero", "huge", "deep"):
        args = ["gate", str(run), "--gate", str(bad[name])]
        result = invoke(args)
        assert_refused(result, args)
        assert str(bad[name]) in result.output
    (tmp_path / "calibration").mkdir()
    calibration = special_files(tmp_path / "calibration", "calibration.json")
    for name in ("fifo", "dev_zero"):
        gate = tmp_path / f"judge-{name}.yaml"
        gate.write_text(f"rules:\n  - judge_agreement: {{file: {calibration[name]}, min: 0.6}}\n")
        args = ["gate", str(run), "--gate", str(gate)]
        result = invoke(args)
        assert_refused(result, args)
        assert "rules.0.judge_agreement.file: " in result.output and "expected a regular file (calibration file)" in result.output
