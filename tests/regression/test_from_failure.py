"""A regression case made from a hasty failure lints clean, fails again for hasty, passes for careful."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from passhat.cases import load_suite
from passhat.cli import main

NOTES = Path(__file__).parents[1] / "data" / "notes"


def cli(*args: str) -> tuple[int, str]:
    r = CliRunner().invoke(main, list(args))
    return r.exit_code, r.output


@pytest.mark.parametrize(("suite", "case_id"), [("reimbursement", "timeout-after-write"), ("refunds", "permission-friend-order")])
def test_regression_case_reproduces_the_failure(tmp_path: Path, suite: str, case_id: str) -> None:
    run = tmp_path / "run"
    assert cli("run", suite, "--agent", "hasty", "--trials", "1", "--out", str(run), "-q", "--no-sanity")[0] == 0
    rec = next(json.loads(x) for x in (run / "trials.jsonl").read_text().splitlines() if json.loads(x)["case_id"] == case_id)
    assert rec["outcome"] == "fail"
    folder = tmp_path / "regressions"
    code, out = cli("cases", "from-failure", str(run), case_id, "0", "--out", str(folder / f"{case_id}.yaml"))
    assert code == 0, out
    data = yaml.safe_load((folder / f"{case_id}.yaml").read_text())
    assert data["split"] == "regression" and data["tags"]["failure"] == rec["failure"]["category"]
    assert data["id"] == f"{case_id}-regression-t0" and rec["failure"]["evidence"][:40] in data["description"]
    loaded = load_suite(str(folder))  # every reference checks out
    assert [c.id for c in loaded.cases] == [data["id"]]
    for agent, outcome in (("hasty", "fail"), ("careful", "pass")):
        out_dir = tmp_path / f"re-{agent}"
        assert cli("run", str(folder), "--agent", agent, "--trials", "2", "--out", str(out_dir), "-q")[0] == 0
        outcomes = {json.loads(x)["outcome"] for x in (out_dir / "trials.jsonl").read_text().splitlines()}
        assert outcomes == {outcome}


def test_relative_domain_paths_are_rewritten_and_bad_requests_refused(tmp_path: Path) -> None:
    run = tmp_path / "run"
    assert cli("run", str(NOTES / "cases"), "--agent", f"{NOTES / 'agents.py'}:twice", "--trials", "1",
               "--out", str(run), "-q")[0] == 0
    out = tmp_path / "elsewhere" / "deep" / "r.yaml"
    assert cli("cases", "from-failure", str(run), "add-note", "0", "--out", str(out))[0] == 0
    assert load_suite(str(out.parent)).cases[0].split == "regression"
    code, msg = cli("cases", "from-failure", str(run), "add-note", "7", "--out", str(out))
    assert code == 2 and "no trial 7" in msg
    good = tmp_path / "good"
    assert cli("run", str(NOTES / "cases"), "--agent", f"{NOTES / 'agents.py'}:good", "--trials", "1",
               "--out", str(good), "-q")[0] == 0
    code, msg = cli("cases", "from-failure", str(good), "add-note", "0", "--out", str(out))
    assert code == 2 and "only failed trials" in msg


def test_an_existing_case_file_is_not_overwritten(tmp_path: Path) -> None:
    """As `cases import`: the file may hold the user's edits; one line naming it, exit 2, file unchanged."""
    run = tmp_path / "run"
    assert cli("run", str(NOTES / "cases"), "--agent", f"{NOTES / 'agents.py'}:twice", "--trials", "1",
               "--out", str(run), "-q")[0] == 0
    out = tmp_path / "mine.yaml"
    out.write_text("# my edits\n")
    code, msg = cli("cases", "from-failure", str(run), "add-note", "0", "--out", str(out))
    assert code == 2 and f"{out} already exists" in msg and len(msg.strip().splitlines()) == 1, msg
    assert out.read_text() == "# my edits\n"
    assert not out.with_suffix(".yaml.tmp").exists()
