"""Evaluating every rule of a gate on a run: the dispatch table is the extension point for new rules.

A new rule kind is a pydantic model in ``gate.model`` (added to ``Rule`` in ``gate.schema``) and a function
``(rule, GateInput, alpha) -> Verdict`` added to ``EVALUATORS`` below — explicitly, so nothing
registers itself on import.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import replace
from typing import Any

from passhat.gate.context import GateInput, RuleInputError
from passhat.gate.load import GateError
from passhat.gate.outcome import RuleResult, Verdict
from passhat.gate.rules_baseline import no_new_failures, non_inferior
from passhat.gate.rules_budget import cost_per_success, judge_agreement, latency
from passhat.gate.rules_canary import canary
from passhat.gate.rules_cases import MORE_CASES, MORE_EITHER, case_success_rate, never_fails, suite_pass_k
from passhat.gate.schema import GateFile
from passhat.gate.select import selection_problem

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
MEANS = frozenset({"pass_hat_k", "pass_at_k", "case_success_rate"})
"""Rules on a mean of per-case values over the selected cases, whose bound is monotone in each case's value: a
run with every trial passing shows the most any run of the same cases can (``reachable``; a sequential run's
decidable looks, ``gate.looks``). ``non_inferior`` is a mean too, of paired differences, but its bound is not
monotone in them."""
STATISTICAL = {"never_fails", "case_success_rate", "pass_hat_k", "pass_at_k", "non_inferior"}
FAIL_FAMILY = {"case_success_rate", "pass_hat_k", "pass_at_k", "non_inferior", "no_new_failures"}
"""Rules whose FAIL is a test at α, so a gate of several of them shares one false-FAIL budget (Holm).
``never_fails`` is not among them: its FAIL is an observed failed trial, not an inference."""


Level = Callable[[int, float], float]
"""Maps (rule index, the α a decision is allowed) to the level its test is run at: the identity for a gate
on a finished run; at a look of a sequential run, the nominal level of that look's boundary
(``gate.looks``), so that α is spent across the looks."""


def holm_fails(verdicts: list[Verdict], alphas: list[float], in_family: list[bool],
               decide: Callable[[int, float], Verdict], settled: Collection[int] = ()) -> list[Verdict]:
    """Keep a FAIL only if Holm's step-down (Holm 1979) across the gate's FAIL-capable rules keeps it.

    The gate FAILs if any rule FAILs, so its false-FAIL rate is the family-wise error of those rules: at
    their bars, three rules at α each gave 5–11 % (issue 22). Holm at step r tests each remaining rule at
    α/(m − r), m = the FAIL-capable rules that were decided (not SKIPPED); a rule's verdict at the smaller
    α is ``decide(i, α')`` — the same test with a wider bound, so "FAIL at α/(m − r)" is "p ≤ α/(m − r)".
    A FAIL that Holm does not keep becomes INCONCLUSIVE (its lower bound was already below the bar).
    PASS needs no correction: the gate PASSes only if every rule does, an intersection–union test whose
    false-PASS rate is at most each rule's α (Berger 1982).

    ``settled``: rules whose FAIL was kept at an earlier look of a sequential run. They count as kept from
    the start (their α is passed on, as Holm allows once a hypothesis is rejected; Maurer & Bretz 2013 for
    group-sequential designs) and are not tested again.
    """
    family = [i for i, v in enumerate(verdicts) if in_family[i] and v.outcome != "SKIPPED"]
    done = [i for i in family if i in settled]
    candidates = [i for i in family if verdicts[i].outcome == "FAIL" and i not in settled]
    m = len(family)
    if m <= 1 or not candidates:
        return verdicts
    kept: dict[int, tuple[Verdict, float]] = {}
    while len(kept) < len(candidates):
        level = m - len(kept) - len(done)
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


def rule_alphas(gate: GateFile, inp: GateInput) -> list[float]:
    """Each rule's own α: its ``alpha`` when it sets one, else the gate's."""
    return [rule.alpha if rule.alpha is not None else inp.alpha for rule in gate.rules]


def decide_rules(gate: GateFile, inp: GateInput, gate_file: str, *, level: Level | None = None,
                 settled: Mapping[int, Verdict] | None = None) -> list[Verdict]:
    """Every rule's verdict, in file order, with the gate's FAILs decided together (:func:`holm_fails`).

    ``level`` turns a rule's α into the level its test runs at (see :data:`Level`); ``settled`` holds the
    verdicts a sequential run decided at earlier looks, kept as they are (their FAILs count as kept by
    Holm). Unusable rule input raises :class:`GateError` (exit 2).
    """
    if gate.require_baseline and inp.baseline is None:
        raise GateError(gate_file, "require_baseline", "this gate requires a baseline run: pass --baseline RUN")
    alphas = rule_alphas(gate, inp)
    at = level or (lambda _i, alpha: alpha)
    done = dict(settled or {})

    def decide(i: int, alpha: float) -> Verdict:
        rule = gate.rules[i]
        try:
            return EVALUATORS[rule.kind](rule, inp, at(i, alpha))
        except RuleInputError as exc:
            raise GateError(gate_file, f"rules.{i}.{rule.kind}.{exc.field}", exc.message) from None

    first = [done[i] if i in done else decide(i, a) for i, a in enumerate(alphas)]
    failed_before = {i for i, v in done.items() if v.outcome == "FAIL"}
    return holm_fails(first, alphas, [rule.kind in FAIL_FAMILY for rule in gate.rules], decide, failed_before)


def rule_results(gate: GateFile, inp: GateInput, verdicts: list[Verdict]) -> list[RuleResult]:
    """The gate.json entries of verdicts, in file order; rules sharing a label are numbered."""
    results: list[RuleResult] = []
    seen: dict[str, int] = {}
    for rule, alpha, verdict in zip(gate.rules, rule_alphas(gate, inp), verdicts, strict=True):
        label = rule.label()
        seen[label] = seen.get(label, 0) + 1
        name = label if seen[label] == 1 else f"{label} #{seen[label]}"
        selection = rule.select.describe() if hasattr(rule, "select") else None
        results.append(RuleResult(
            name=name, kind=rule.kind, outcome=verdict.outcome, reason=verdict.reason, value=verdict.value,
            bar=verdict.bar, low=verdict.low, high=verdict.high, selection=selection,
            alpha=alpha if rule.kind in STATISTICAL else None, details=verdict.details))
    return results


def evaluate_rules(gate: GateFile, inp: GateInput, gate_file: str) -> list[RuleResult]:
    """One result per rule, in file order, on a finished run. Unusable rule input raises :class:`GateError`.

    The run must be finished: ``gate.report.evaluate_gate`` refuses a gate on part of a fixed-design run,
    and a sequential run is gated at its planned looks (``gate.looks``). An INCONCLUSIVE that no run of these
    cases could turn into a PASS says so (:func:`out_of_reach`), instead of inviting more trials.
    """
    verdicts = decide_rules(gate, inp, gate_file)
    for i, (rule, alpha) in enumerate(zip(gate.rules, rule_alphas(gate, inp), strict=True)):
        if verdicts[i].outcome == "INCONCLUSIVE":
            verdicts[i] = out_of_reach(rule, inp, alpha, verdicts[i])
    return rule_results(gate, inp, verdicts)


def reachable(rule: Any, inp: GateInput, alpha: float, trials: int | None = None) -> Verdict | None:
    """The rule's verdict on a run of the same cases with every trial passing (``GateInput.perfect``), or None
    for a rule that is not a suite mean (its best case is not one run) or whose input is unusable (its real
    evaluation says why).

    Why: over T cases a suite mean's lower bound is highest when every trial passes, and that best bound is
    about α^(1/T) however many trials each case has (design note 033: 0.861 at 20 cases and α = 0.05). A bar
    above it can never PASS: the gate stays INCONCLUSIVE and "add trials" would be wrong advice. A check that
    cannot fire must say so, before the run (``unreachable_rules``) and in its verdict."""
    if rule.kind not in MEANS:
        return None
    try:
        return EVALUATORS[rule.kind](rule, inp.perfect(True, trials), alpha)
    except RuleInputError:
        return None


def out_of_reach(rule: Any, inp: GateInput, alpha: float, verdict: Verdict) -> Verdict:
    """``verdict`` (INCONCLUSIVE), saying so when even a run with every trial passing would not PASS."""
    best = reachable(rule, inp, alpha)
    if best is None or best.outcome == "PASS" or best.low is None:  # no bound at all: its reason says why
        return verdict
    low = f"{best.low:.3f}"
    said = verdict.reason.replace(MORE_EITHER, "").replace(MORE_CASES, "")
    return replace(verdict, reason=f"{said}; no run of these {_cases(rule, inp)} cases with {inp.planned_trials} "
                                   f"trials each can PASS this bar: with every trial passing the lower bound would "
                                   f"be {low} ({_more_trials(rule, inp, alpha)}; more trials can still show a FAIL)",
                   details={**verdict.details, "pass_reachable": False, "best_lower_bound": best.low})


def _more_trials(rule: Any, inp: GateInput, alpha: float) -> str:
    """Whether 16 times the planned trials per case would make a PASS reachable: near the ceiling the best bound
    is set by the number of cases, not by the trials (design note 033)."""
    more = reachable(rule, inp, alpha, trials=16 * inp.planned_trials)
    if more is not None and more.outcome == "PASS":
        return "more trials per case would make it reachable"
    return f"{16 * inp.planned_trials} trials per case would not either: only more cases raise it"


def _cases(rule: Any, inp: GateInput) -> int:
    """How many of the run's cases a suite-mean rule selects."""
    return len(inp.selected(rule.select))


def unreachable_rules(gate: GateFile, inp: GateInput) -> list[str]:
    """One line per suite-mean rule that no run of ``inp``'s cases can PASS, at the planned trials or at 16
    times as many, and per rule whose ``select`` names no case of the run (a misspelt tag, id or split: the rule
    could only be INCONCLUSIVE): said before the first trial, when the bar can still be changed without moving
    goalposts."""
    lines = []
    metas = {cid: inp.run.meta(cid) for cid in inp.run.suite.cases}
    for i, (rule, alpha) in enumerate(zip(gate.rules, rule_alphas(gate, inp), strict=True)):
        select = getattr(rule, "select", None)  # every rule about cases has one
        if select is not None and (problem := selection_problem(select, metas)) is not None:
            verdict = "can only be INCONCLUSIVE" if not inp.selected(select) else "looks at fewer cases than it names"
            label = rule.label() if rule.name is None else f"{rule.label()}, select {select.describe()}"
            lines.append(f"gate rule {i} ({label}): {problem} — the rule {verdict}; fix the selection or the cases")
            continue
        best = reachable(rule, inp, alpha)
        if best is None or best.outcome == "PASS" or best.low is None:  # no bound (k > trials): the verdict says so
            continue
        low = f"{best.low:.3f}"
        lines.append(f"gate rule {i} ({rule.label()}): cannot PASS with these {_cases(rule, inp)} cases at "
                     f"{inp.planned_trials} trials each — even with every trial passing, its lower bound would be "
                     f"{low}, below the bar ({_more_trials(rule, inp, alpha)}); lower the bar or add cases")
    return lines
