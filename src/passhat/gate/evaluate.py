"""Evaluating every rule of a gate on a run: the dispatch table is the extension point for new rules.

A new rule kind is a pydantic model in ``gate.model`` (added to ``Rule`` in ``gate.schema``) and a function
``(rule, GateInput, alpha) -> Verdict`` added to ``EVALUATORS`` below — explicitly, so nothing
registers itself on import.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from passhat.gate.context import GateInput, RuleInputError
from passhat.gate.load import GateError
from passhat.gate.outcome import RuleResult, Verdict
from passhat.gate.rules_baseline import no_new_failures, non_inferior
from passhat.gate.rules_budget import cost_per_success, judge_agreement, latency
from passhat.gate.rules_canary import canary
from passhat.gate.rules_cases import case_success_rate, never_fails, suite_pass_k
from passhat.gate.schema import GateFile

Evaluator = Callable[[Any, GateInput, float], Verdict]
EVALUATORS: dict[str, Evaluator] = {
    "never_fails": never_fails,
    "no_new_failures": no_new_failures,
    "case_success_rate": case_success_rate,
    "pass_hat_k": suite_pass_k,
    "pass_at_k": suite_pass_k,
    "non_inferior": non_inferior,
    "latency": latency,
    "cost_per_success": cost_per_success,
    "judge_agreement": judge_agreement,
    "canary": canary,
}
STATISTICAL = {"never_fails", "case_success_rate", "pass_hat_k", "pass_at_k", "non_inferior"}


def evaluate_rules(gate: GateFile, inp: GateInput, gate_file: str) -> list[RuleResult]:
    """One result per rule, in file order. Unusable rule input raises :class:`GateError` (exit 2)."""
    if gate.require_baseline and inp.baseline is None:
        raise GateError(gate_file, "require_baseline", "this gate requires a baseline run: pass --baseline RUN")
    complete = inp.run.manifest.get("status") == "complete"
    results: list[RuleResult] = []
    seen: dict[str, int] = {}
    for i, rule in enumerate(gate.rules):
        alpha = rule.alpha if rule.alpha is not None else inp.alpha
        try:
            verdict = EVALUATORS[rule.kind](rule, inp, alpha)
        except RuleInputError as exc:
            raise GateError(gate_file, f"rules.{i}.{rule.kind}.{exc.field}", exc.message) from None
        if not complete and verdict.outcome == "PASS":
            # Peeking at a run that has not finished inflates the error rate: a PASS is not final yet.
            verdict = replace(verdict, outcome="INCONCLUSIVE",
                              reason=f"{verdict.reason}; but the run is not complete, so PASS is not final")
        elif not complete and verdict.outcome == "INCONCLUSIVE":
            verdict = replace(verdict, reason=f"{verdict.reason} (the run is not complete: resume it for a verdict)")
        label = rule.label()
        seen[label] = seen.get(label, 0) + 1
        name = label if seen[label] == 1 else f"{label} #{seen[label]}"
        selection = rule.select.describe() if hasattr(rule, "select") else None
        results.append(RuleResult(
            name=name, kind=rule.kind, outcome=verdict.outcome, reason=verdict.reason, value=verdict.value,
            bar=verdict.bar, low=verdict.low, high=verdict.high, selection=selection,
            alpha=alpha if rule.kind in STATISTICAL else None, details=verdict.details))
    return results
