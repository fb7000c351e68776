"""A gate's false-FAIL rate is the gate's: Holm across its FAIL-capable rules (issue 22 item 2)."""

from __future__ import annotations

from passhat.gate.evaluate import holm_fails
from passhat.gate.outcome import Verdict


def _rule_with_p(p: float):  # a rule whose FAIL is a one-sided test with p-value p
    return lambda alpha: Verdict("FAIL" if p <= alpha else "INCONCLUSIVE", f"p = {p}")


def _gate(ps: list[float], alpha: float = 0.05, family: list[bool] | None = None) -> list[str]:
    rules = [_rule_with_p(p) for p in ps]
    first = [r(alpha) for r in rules]
    out = holm_fails(first, [alpha] * len(ps), family or [True] * len(ps), lambda i, a: rules[i](a))
    return [v.outcome for v in out]


def test_three_rules_each_failing_at_alpha_alone_do_not_fail_the_gate() -> None:
    assert _gate([0.04, 0.03, 0.045]) == ["INCONCLUSIVE"] * 3


def test_holm_steps_down_once_the_smallest_fail_holds() -> None:
    # 0.01 ≤ 0.05/3 holds; then 0.024 ≤ 0.05/2 holds; then 0.04 ≤ 0.05 holds.
    assert _gate([0.04, 0.01, 0.024]) == ["FAIL"] * 3
    # 0.01 holds; 0.03 > 0.05/2 stops the step-down, so 0.03 and 0.04 are not kept.
    assert _gate([0.04, 0.01, 0.03]) == ["INCONCLUSIVE", "FAIL", "INCONCLUSIVE"]


def test_a_single_fail_capable_rule_keeps_its_alpha_and_tripwires_are_not_counted() -> None:
    assert _gate([0.04]) == ["FAIL"]
    assert _gate([0.04, 0.0], family=[True, False]) == ["FAIL", "FAIL"]
