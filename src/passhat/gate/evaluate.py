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
FAIL_FAMILY = {"case_success_rate", "pass_hat_k", "pass_at_k", "non_inferior", "no_new_failures"}
"""Rules whose FAIL is a test at α, so a gate of several of them shares one false-FAIL budget (Holm).
``never_fails`` is not among them: its FAIL is an observed failed trial, not an inference."""


def holm_fails(verdicts: list[Verdict], alphas: list[float], in_family: list[bool],
               decide: Callable[[int, float], Verdict]) -> list[Verdict]:
    """Keep a FAIL only if Holm's step-down (Holm 1979) across the gate's FAIL-capable rules keeps it.

    The gate FAILs if any rule FAILs, so its false-FAIL rate is the family-wise error of those rules: at
    their bars, three rules at α each gave 5–11 % (issue 22). Holm at step r tests each remaining rule at
    α/(m − r), m = the FAIL-capable rules that were decided (not SKIPPED); a rule's verdict at the smaller
    α is ``decide(i, α')`` — the same test with a wider bound, so "FAIL at α/(m − r)" is "p ≤ α/(m − r)".
    A FAIL that Holm does not keep becomes INCONCLUSIVE (its lower bound was already below the bar).
    PASS needs no correction: the gate PASSes only if every rule does, an intersection–union test whose
    false-PASS rate is at most each rule's α (Berger 1982).
    """
    family = [i for i, v in enumerate(verdicts) if in_family[i] and v.outcome != "SKIPPED"]
    candidates = [i for i in family if verdicts[i].outcome == "FAIL"]
    m = len(family)
    if m <= 1 or not candidates:
        return verdicts
    kept: dict[int, tuple[Verdict, float]] = {}
    while len(kept) < len(candidates):
        level = m - len(kept)
        step = {i: decide(i, alphas[i] / level) for i in candidates if i not in kept}
        hits = {i: (v, alphas[i] / level) for i, v in step.items() if v.outcome == "FAIL"}
        if not hits:
            break
        kept.update(hits)
    out = list(verdicts)
    for i in candidates:
        if i in kept:
            v, used = kept[i]
            out[i] = replace(v, reason=f"{v.reason} (FAIL holds at α = {used:.3g}: Holm across {m} FAIL-capable rules)",
                             details={**v.details, "holm": {"rules": m, "kept": True, "alpha_used": used}})
        else:
            v = verdicts[i]
            out[i] = replace(v, outcome="INCONCLUSIVE",
                             reason=f"{v.reason}; but this FAIL does not survive Holm across the gate's {m} "
                                    "FAIL-capable rules, so INCONCLUSIVE",
                             details={**v.details, "holm": {"rules": m, "kept": False}})
    return out


def evaluate_rules(gate: GateFile, inp: GateInput, gate_file: str) -> list[RuleResult]:
    """One result per rule, in file order. Unusable rule input raises :class:`GateError` (exit 2)."""
    if gate.require_baseline and inp.baseline is None:
        raise GateError(gate_file, "require_baseline", "this gate requires a baseline run: pass --baseline RUN")
    complete = inp.run.manifest.status == "complete"
    alphas = [rule.alpha if rule.alpha is not None else inp.alpha for rule in gate.rules]

    def decide(i: int, alpha: float) -> Verdict:
        rule = gate.rules[i]
        try:
            return EVALUATORS[rule.kind](rule, inp, alpha)
        except RuleInputError as exc:
            raise GateError(gate_file, f"rules.{i}.{rule.kind}.{exc.field}", exc.message) from None

    verdicts = holm_fails([decide(i, a) for i, a in enumerate(alphas)], alphas,
                          [rule.kind in FAIL_FAMILY for rule in gate.rules], decide)
    results: list[RuleResult] = []
    seen: dict[str, int] = {}
    for i, rule in enumerate(gate.rules):
        alpha, verdict = alphas[i], verdicts[i]
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
