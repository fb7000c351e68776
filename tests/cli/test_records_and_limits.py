"""A stored record holding NaN is bad input naming the file, line and field (``show``, ``gate``, ``regrade`` and
``report`` exited 70 on it); ``-k`` and ``-j`` far beyond what a run can use are refused before anything runs
(``-k 2000000`` planned 32 million trials and reached 2.6 GB)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import passhat
from passhat.cli import main
from passhat.errors import PasshatError
from passhat.runner import run as runner_run

NOTES = Path(__file__).parents[1] / "data" / "notes"
GOOD = f"{NOTES / 'agents.py'}:good"


def cli(*args: Any) -> Any:
    return CliRunner().invoke(main, [str(a) for a in args])


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("nan") / "run"
    r = cli("run", NOTES / "cases", "--agent", GOOD, "-k", "3", "--out", out, "-q", "--no-report", "--no-sanity")
    assert r.exit_code == 0, r.output
    return out


@pytest.fixture
def poisoned(run: Path, tmp_path: Path) -> Path:
    """A copy whose second record's agent time is NaN (and no summary.json to fall back on)."""
    copy = Path(shutil.copytree(run, tmp_path / "run"))
    lines = (copy / "trials.jsonl").read_text().splitlines()
    head, sep, tail = lines[1].partition('"agent_s":')
    assert sep, lines[1][:200]
    lines[1] = head + sep + "NaN" + tail[tail.index(","):]
    (copy / "trials.jsonl").write_text("\n".join(lines) + "\n")
    (copy / "summary.json").unlink()
    (copy / "gate.yaml").write_text("name: g\nrules:\n  - latency: {percentile: 95, max_seconds: 20}\n")
    return copy


@pytest.mark.parametrize("command", ["show", "gate", "regrade", "report"])
def test_nan_in_a_record_names_the_file_line_and_field(poisoned: Path, tmp_path: Path, command: str) -> None:
    extra = {"gate": ["--gate", poisoned / "gate.yaml"], "regrade": ["--out", tmp_path / "regraded"]}
    r = cli(command, poisoned, *extra.get(command, []))
    assert r.exit_code == 2, r.output
    assert f"{poisoned / 'trials.jsonl'}:2: timing.agent_s is NaN" in r.output, r.output
    assert len(r.output.strip().splitlines()) == 1, r.output


def test_a_word_nan_in_a_reply_is_not_a_number(run: Path, tmp_path: Path) -> None:
    copy = Path(shutil.copytree(run, tmp_path / "run"))
    text = (copy / "trials.jsonl").read_text().replace('"reply":"I added note', '"reply":"NaN Infinity: I added note', 1)
    assert "NaN Infinity" in text
    (copy / "trials.jsonl").write_text(text)
    (copy / "summary.json").unlink()
    r = cli("show", copy)
    assert r.exit_code == 0, r.output


@pytest.mark.parametrize(("option", "value", "words"), [
    ("-k", "2000000", "'--trials' / '-k' / '--repeat': 2000000 is not in the range 1<=x<=1000"),
    ("-j", "100000", "'-j' / '--concurrency': 100000 is not in the range 1<=x<=1000"),
])
def test_trials_and_concurrency_far_beyond_use_are_refused(tmp_path: Path, option: str, value: str, words: str) -> None:
    r = cli("run", NOTES / "cases", "--agent", GOOD, option, value, "--out", tmp_path / "run", "-q")
    assert r.exit_code == 2 and words in r.output, r.output
    assert not (tmp_path / "run").exists()


def test_the_library_refuses_them_too_and_bounds_the_plan(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(PasshatError, match="trials .* between 1 and 1000, got 1001"):
        passhat.evaluate(str(NOTES / "cases"), GOOD, trials=1001, out=tmp_path / "a")
    with pytest.raises(PasshatError, match="concurrency .* between 1 and 1000, got 1001"):
        passhat.evaluate(str(NOTES / "cases"), GOOD, concurrency=1001, out=tmp_path / "b")
    monkeypatch.setattr(runner_run, "MAX_PLANNED_TRIALS", 5)
    with pytest.raises(PasshatError, match=r"1 case\(s\) × 6 trial\(s\) = 6 trials is more than one run holds \(5"):
        passhat.evaluate(str(NOTES / "cases"), GOOD, trials=6, out=tmp_path / "c", sanity=False)
    assert not (tmp_path / "c" / "trials.jsonl").exists()
