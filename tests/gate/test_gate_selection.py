"""A gate rule whose ``select`` names no case of the run is said before the first trial: a misspelt tag, value,
split or case id used to leave the rule INCONCLUSIVE ("no evidence") only after every trial had run, or to
narrow it silently to the ids that did exist."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from click.testing import CliRunner

import passhat
from passhat.cli import main
from passhat.runner import RunStore

BAD = """rules:
  - never_fails: {select: {tags: {scenario: permision}}}
  - never_fails: {name: high risk, select: {tags: {riks: high}}}
  - pass_hat_k: {k: 1, min: 0.1, select: {cases: [refund-4812, refund-4821]}}
  - case_success_rate: {min: 0.1, select: {split: regression}}
  - never_fails: {select: {tags: {scenario: permission, risk: medium}}}
  - never_fails: {select: {tags: {scenario: permission}}}
"""


def test_a_selection_of_no_case_is_said_before_the_first_trial(tmp_path: Path, gate_file: Any) -> None:
    out = tmp_path / "run"
    said: list[tuple[str, int]] = []

    def warned(message: str) -> None:  # how many trials were recorded when it was said
        said.append((message, sum(1 for _ in RunStore(out).iter_records())))

    passhat.evaluate("refunds", "careful", trials=1, out=out, gate=gate_file(BAD), on_warning=warned)
    assert [n for _, n in said] == [0] * 5
    assert [m for m, _ in said] == [
        "gate rule 0 (never fails [scenario=permision]): no case has scenario=permision (values: constraint, fault, "
        "happy-path, idempotency, multi-turn, permission, policy) — the rule can only be INCONCLUSIVE; fix the "
        "selection or the cases",
        "gate rule 1 (high risk, select riks=high): no case has a tag 'riks' (tags: difficulty, fault, kind, "
        "phrasing, risk, scenario, turns) — the rule can only be INCONCLUSIVE; fix the selection or the cases",
        "gate rule 2 (pass^1 ≥ 0.1 [cases=refund-4812,refund-4821]): no case 'refund-4821' in this run — the rule "
        "looks at fewer cases than it names; fix the selection or the cases",
        "gate rule 3 (case success rate ≥ 0.1 [split=regression]): no case is in split regression (splits: dev, holdout) — the "
        "rule can only be INCONCLUSIVE; fix the selection or the cases",
        "gate rule 4 (never fails [scenario=permission risk=medium]): no case matches all of it at once — the rule "
        "can only be INCONCLUSIVE; fix the selection or the cases",
    ]


def test_the_command_prints_the_rule_label_with_its_brackets(tmp_path: Path, gate_file: Any) -> None:
    """Warnings are printed as text, not rich markup: ``[scenario=permision]`` used to vanish from the line."""
    gate = gate_file("rules:\n  - never_fails: {select: {tags: {scenario: permision}}}\n")
    r = CliRunner().invoke(main, ["run", "refunds", "--agent", "careful", "-k", "1", "--case", "refund-4812",
                                  "--out", str(tmp_path / "run"), "--gate", str(gate), "--no-report"])
    assert r.exit_code == 3, r.output
    assert "warning: gate rule 0 (never fails [scenario=permision]): no case has scenario=permision" in r.output
