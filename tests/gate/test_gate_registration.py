"""Pre-registration through the real CLI: recorded before the first trial, edits refused, overrides recorded."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from passhat.runner import RunStore

NEVER = "rules:\n  - never_fails:\n"
AGENTS = Path(__file__).parents[1] / "data" / "notes" / "agents_compare.py"


@pytest.fixture
def suite(write_suite: Any) -> Path:
    folder: Path = write_suite({"a": "base=pp", "b": "base=pp"})
    return folder


def run(cli: Any, suite: Path, out: Path, *extra: Any, agent: str = "base", trials: int = 2, env: Any = None) -> Any:
    return cli("run", suite, "--agent", f"{AGENTS}:{agent}", "--trials", trials, "--out", out, "-q", "--no-sanity",
               *extra, env=env)


def said(result: Any) -> str:
    """The one line that says it (messages are never wrapped)."""
    [line] = [x for x in result.output.splitlines() if x.startswith(("error: ", "warning: "))]
    return line


def test_gate_is_in_the_manifest_before_the_first_trial(cli: Any, suite: Path, tmp_path: Path, gate_file: Any) -> None:
    gate = gate_file(NEVER)
    out = tmp_path / "run"
    r = run(cli, suite, out, "--gate", gate, agent="peek", trials=1, env={"PEEK_MANIFEST": str(out / "manifest.json")})
    assert r.exit_code == 0, r.output
    sha = hashlib.sha256(gate.read_bytes()).hexdigest()
    replies = [rec.reply for rec in RunStore(out).load()]
    assert replies and all(reply.endswith(f"status=running gate={sha}") for reply in replies)
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["gate"]["sha256"] == sha and manifest["gate"]["path"] == str(gate.resolve())
    assert manifest["gate"]["gate"]["rules"][0]["kind"] == "never_fails"


@pytest.mark.parametrize(("plans", "rules", "code"), [
    ({"a": "base=pp"}, NEVER, 0),
    ({"a": "base=pf"}, NEVER, 1),
    ({"a": "base=pp"}, "rules:\n  - pass_hat_k: {k: 8, min: 0.25}\n", 3),
])
def test_run_exit_code_follows_the_gate(cli: Any, tmp_path: Path, gate_file: Any, write_suite: Any,
                                        plans: dict[str, str], rules: str, code: int) -> None:
    suite = write_suite(plans, "s")
    out = tmp_path / "run"
    r = run(cli, suite, out, "--gate", gate_file(rules))
    assert r.exit_code == code, r.output
    result = json.loads((out / "gate.json").read_text())
    assert result["exit_code"] == code and result["gate"]["preregistered"] is True
    assert {"outcome", "value", "low", "high", "bar", "reason"} <= set(result["rules"][0])


def test_a_malformed_gate_stops_the_run_before_any_trial(cli: Any, suite: Path, tmp_path: Path, gate_file: Any) -> None:
    out = tmp_path / "run"
    r = run(cli, suite, out, "--gate", gate_file("rules:\n  - never_fail:\n", "typo.yaml"))
    assert r.exit_code == 2 and "typo.yaml: rules.0: unknown rule 'never_fail'" in said(r)
    assert not (out / "trials.jsonl").exists()


def test_an_edited_gate_is_refused_unless_the_override_is_recorded(cli: Any, suite: Path, tmp_path: Path,
                                                                    gate_file: Any) -> None:
    gate = gate_file(NEVER)
    original = hashlib.sha256(gate.read_bytes()).hexdigest()
    out = tmp_path / "run"
    assert run(cli, suite, out, "--gate", gate).exit_code == 0
    gate.write_text("rules:\n  - case_success_rate: {min: 0.1}\n")
    for args in ((), ("--gate", gate)):
        r = cli("gate", out, *args)
        assert r.exit_code == 2 and "changed after the run started" in said(r) and "moving the goalposts" in said(r)
    r = cli("gate", out, "--allow-gate-change", "--summary-md", tmp_path / "gate.md")
    assert r.exit_code == 0, r.output  # the edited (lowered) bar passes: exactly what the override makes visible
    assert "GATE CHANGED AFTER THE RUN STARTED" in r.output
    assert "**Gate file changed after the run started**" in (tmp_path / "gate.md").read_text()
    info = json.loads((out / "gate.json").read_text())["gate"]
    assert info["preregistered"] is False and info["override"]["allowed_gate_change"] is True
    assert info["override"]["registered_sha256"] == original != info["override"]["used_sha256"]


def test_a_gate_chosen_after_the_run_is_reported_as_not_preregistered(cli: Any, suite: Path, tmp_path: Path,
                                                                      gate_file: Any) -> None:
    out = tmp_path / "run"
    assert run(cli, suite, out).exit_code == 0
    r = cli("gate", out)
    assert r.exit_code == 2 and "no registered gate" in said(r)
    r = cli("gate", out, "--gate", gate_file(NEVER))
    assert r.exit_code == 0 and "NOT pre-registered" in said(r)
    assert json.loads((out / "gate.json").read_text())["gate"]["preregistered"] is False


def test_the_registered_rules_are_used_when_the_file_is_gone(cli: Any, suite: Path, tmp_path: Path, gate_file: Any) -> None:
    gate = gate_file(NEVER)
    out = tmp_path / "run"
    assert run(cli, suite, out, "--gate", gate).exit_code == 0
    gate.unlink()
    r = cli("gate", out)
    assert r.exit_code == 0, r.output
    info = json.loads((out / "gate.json").read_text())["gate"]
    assert info["source"] == "manifest" and info["preregistered"] is True


def test_resume_keeps_the_registered_gate_and_refuses_another(cli: Any, suite: Path, tmp_path: Path,
                                                             gate_file: Any) -> None:
    gate = gate_file(NEVER)
    out = tmp_path / "run"
    assert run(cli, suite, out, "--gate", gate).exit_code == 0
    other = gate_file("rules:\n  - case_success_rate: {min: 0.1}\n", "other.yaml")
    r = run(cli, suite, out, "--resume", "--gate", other)
    assert r.exit_code == 2 and "differs from the gate registered" in said(r)
    assert run(cli, suite, out, "--resume").exit_code == 0
    assert json.loads((out / "manifest.json").read_text())["gate"]["sha256"] == hashlib.sha256(gate.read_bytes()).hexdigest()


def test_resume_without_naming_a_gate_keeps_the_registration_when_the_file_is_gone(cli: Any, suite: Path, tmp_path: Path,
                                                                                   gate_file: Any) -> None:
    """The manifest holds the registered rules: a resume that names no gate file must not read it again (it may
    have moved, or been edited after the run started, which only a resume that offers it must answer for)."""
    gate = gate_file(NEVER)
    out = tmp_path / "run"
    assert run(cli, suite, out, "--gate", gate).exit_code == 0
    registered = json.loads((out / "manifest.json").read_text())["gate"]
    gate.unlink()
    r = run(cli, suite, out, "--resume")
    assert r.exit_code == 0, said(r)
    assert json.loads((out / "manifest.json").read_text())["gate"] == registered


def test_gating_a_run_afterwards_puts_the_verdict_into_its_report(cli: Any, suite: Path, tmp_path: Path,
                                                                   gate_file: Any) -> None:
    """``passhat gate`` on a run that has a report rewrites it: a report without the verdict (or with an older
    one) next to gate.json would tell the reader something else than the exit code did."""
    out = tmp_path / "run"
    assert run(cli, suite, out).exit_code == 0
    assert 'id="gate"' not in (out / "report.html").read_text()
    r = cli("gate", out, "--gate", gate_file(NEVER))
    assert r.exit_code == 0, r.output
    page = (out / "report.html").read_text()
    assert 'id="gate"' in page and '<b class="verdict">PASS</b>' in page
    r = cli("gate", out, "--gate", gate_file("rules:\n  - pass_hat_k: {k: 8, min: 0.25}\n", "strict.yaml"))
    assert r.exit_code == 3 and '<b class="verdict">INCONCLUSIVE</b>' in (out / "report.html").read_text()


def test_gating_a_run_made_without_a_report_writes_none(cli: Any, suite: Path, tmp_path: Path, gate_file: Any) -> None:
    out = tmp_path / "run"
    assert run(cli, suite, out, "--no-report").exit_code == 0
    assert cli("gate", out, "--gate", gate_file(NEVER)).exit_code == 0
    assert not (out / "report.html").exists()


def test_another_gate_file_is_refused_as_another_gate_not_as_an_edit(cli: Any, suite: Path, tmp_path: Path,
                                                                       gate_file: Any) -> None:
    """``passhat gate RUN --gate OTHER.yaml`` used to say OTHER.yaml "changed after the run started": it never did."""
    gate = gate_file(NEVER)
    out = tmp_path / "run"
    assert run(cli, suite, out, "--gate", gate).exit_code == 0
    other = gate_file("rules:\n  - case_success_rate: {min: 0.1}\n", "other.yaml")
    r = cli("gate", out, "--gate", other)
    assert r.exit_code == 2 and "changed after the run started" not in said(r)
    assert f"other.yaml: this is not the gate registered for this run ({gate}, registered " in said(r)
    assert "Choosing another gate after seeing results (moving the goalposts) is refused" in said(r)
    assert cli("gate", out, "--gate", other, "--allow-gate-change").exit_code == 0
    override = json.loads((out / "gate.json").read_text())["gate"]["override"]
    assert override["message"] == f"a gate other than the registered {gate}; evaluated anyway (--allow-gate-change)"
