"""Rules on one run's cases: never fails, the share of cases passing one attempt, suite pass^k / pass@k.

Every bound is a one-sided (1 − α) bound, i.e. an end of the two-sided (1 − 2α) interval. A selected
case with fewer graded trials than the run planned (infrastructure errors, an outage) is missing
evidence: what it shows can make a rule FAIL, but it keeps the rule from PASS (``not_passing``).
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from passhat.gate.context import GateInput
from passhat.gate.model import CaseSuccessRate, NeverFails, PassHatK
from passhat.gate.outcome import Outcome, Verdict, three_way
from passhat.metric_names import PassMetric
from passhat.stats import clopper_pearson_lower, coherent_curve, estimate_matrix, suite_intervals

MORE_CASES = " (more cases would decide it)"
MORE_EITHER = " (more cases or trials would decide it)"
"""The hints of an INCONCLUSIVE that straddles its bar; ``gate.evaluate.out_of_reach`` takes them back where no run
of these cases could PASS."""


def _no_cases(rule: NeverFails | CaseSuccessRate | PassHatK) -> Verdict:
    return Verdict("INCONCLUSIVE", f"no case of the run matches the selection ({rule.select.describe()}): no evidence")


def listed(ids: list[str], limit: int = 10) -> str:
    """``a, b, c and 7 more``: case ids in a reason, bounded so a 10,000-case outage stays one line."""
    return ", ".join(ids[:limit]) + (f" and {len(ids) - limit} more" if len(ids) > limit else "")


def not_passing(verdict: Verdict, inp: GateInput, ids: list[str]) -> Verdict:
    """A PASS becomes INCONCLUSIVE when a selected case has fewer graded trials than the run planned."""
    short = inp.incomplete(ids)
    if verdict.outcome != "PASS" or not short:
        return verdict
    errors = sum(inp.run.tallies[c].errors for c in short)
    reason = (f"{verdict.reason}; but {len(short)} case(s) have fewer graded trials than the {inp.planned_trials} "
              f"planned ({errors} infrastructure error(s)): {listed(short)}")
    return replace(verdict, outcome="INCONCLUSIVE", reason=reason,
                   details={**verdict.details, "incomplete": short})


def never_fails(rule: NeverFails, inp: GateInput, alpha: float) -> Verdict:
    """FAIL on any failed trial; PASS when every trial passed (and the CP bounds reach ``min_lower_bound``)."""
    ids = inp.selected(rule.select)
    if not ids:
        return _no_cases(rule)
    tallies = [inp.run.tallies[c] for c in ids]
    cp_low = clopper_pearson_lower(np.array([t.passes for t in tallies]), np.array([t.n for t in tallies]), 1 - alpha)
    per_case = {t.case_id: {"successes": t.passes, "n": t.n, "errors": t.errors,
                            "cp_low": float(low) if t.n else None} for t, low in zip(tallies, cp_low, strict=True)}
    failing = [t for t in tallies if t.fails]
    graded = [t for t in tallies if t.n]
    bounds = [v["cp_low"] for v in per_case.values() if v["cp_low"] is not None]
    low = min(bounds) if bounds else None
    value = min((t.passes / t.n for t in graded), default=None)

    def verdict(outcome: Outcome, reason: str) -> Verdict:
        return Verdict(outcome, reason, value, 1.0, low, None, {"cases": per_case})

    if failing:
        shown = listed([f"{t.case_id} ({t.passes}/{t.n})" for t in failing])
        return verdict("FAIL", f"{sum(t.fails for t in failing)} failed trial(s) in: {shown}")
    missing = [t.case_id for t in tallies if not t.n]
    if missing:
        return verdict("INCONCLUSIVE", f"no graded trial (infrastructure errors only) for: {listed(missing)}")
    fewest = min(t.n for t in graded)
    claim = (f"all {sum(t.n for t in graded)} trial(s) of {len(graded)} case(s) passed; one-sided "
             f"{1 - alpha:.0%} Clopper–Pearson lower bound of the per-trial pass rate ≥ {low:.3f} (fewest trials: {fewest})")
    if rule.min_lower_bound is not None and low is not None and low < rule.min_lower_bound:
        needed = math.ceil(math.log(alpha) / math.log(rule.min_lower_bound))
        return verdict("INCONCLUSIVE", f"{claim}, below the required {rule.min_lower_bound:g}: too few trials to "
                       f"claim it never fails (needs ≥ {needed} passing trials per case)")
    return not_passing(verdict("PASS", claim), inp, ids)


def case_success_rate(rule: CaseSuccessRate, inp: GateInput, alpha: float) -> Verdict:
    """The mean over selected cases of each case's pass rate c/n, with Gaffke's one-sided bounds over cases.

    That mean is the share of cases expected to pass one attempt: what the rule measured with one trial
    per case, and an estimand that does not move with the number of trials n. Before issue 22 the rule
    counted cases that passed *every* trial, whose expected share is E[p^n]: a strong agent over 40 cases
    PASSed a bar of 0.85 56 % of the time at 4 trials and 13 % at 16 (``bench/sim_gate_error.py``). More
    trials now only narrow the interval (99.8 % and 100 %). Cases sharing a ``group`` count as one unit.
    """
    ids = inp.selected(rule.select)
    if not ids:
        return _no_cases(rule)
    tallies = inp.run.tallies
    graded = [c for c in ids if tallies[c].n]
    missing = [c for c in ids if not tallies[c].n]
    if not graded:
        return Verdict("INCONCLUSIVE", "no selected case has a graded trial", bar=rule.min)
    rates = np.array([[tallies[c].passes / tallies[c].n] for c in graded])
    groups = [inp.run.meta(c).group for c in graded]
    (iv,) = suite_intervals(rates, groups, seed=inp.run.seed, confidence=1 - 2 * alpha)
    outcome = three_way(iv.low, iv.high, rule.min)
    full = [c for c in graded if tallies[c].passes == tallies[c].n]
    details = {"mean_pass_rate": iv.estimate, "fully_passing": len(full), "cases": len(graded), "units": iv.n_units,
               "method": iv.method, "missing": missing,
               "not_fully_passing": [c for c in graded if tallies[c].passes != tallies[c].n]}
    reason = (f"mean per-case pass rate {iv.estimate:.3f} over {len(graded)} case(s), {iv.n_units} unit(s) (the share "
              f"of cases expected to pass one attempt; {len(full)} passed every trial); one-sided {1 - alpha:.0%} "
              f"bounds [{iv.low:.3f}, {iv.high:.3f}] ({iv.method}) vs bar {rule.min:g}")
    if outcome == "INCONCLUSIVE":
        reason += ": the interval straddles the bar" + MORE_CASES
    return not_passing(Verdict(outcome, reason, iv.estimate, rule.min, iv.low, iv.high, details), inp, ids)


def suite_pass_k(rule: PassHatK, inp: GateInput, alpha: float) -> Verdict:
    """Suite pass^k or pass@k from Gaffke's seeded bounds over cases (a group is one unit), made coherent in k."""
    ids = inp.selected(rule.select)
    if not ids:
        return _no_cases(rule)
    k = rule.k
    included = [c for c in ids if inp.run.tallies[c].n >= k]
    short = [c for c in ids if inp.run.tallies[c].n < k]
    symbol = "pass^" if rule.kind == "pass_hat_k" else "pass@"
    if not included:
        trials = inp.run.manifest.trials
        return Verdict("INCONCLUSIVE", f"no selected case has {k} graded trials ({symbol}{k} needs n ≥ {k}; "
                       f"the run has {trials} per case)", bar=rule.min, details={"too_few_trials": short})
    # The whole curve j = 1..k over the selected cases, made coherent as in summary.json, so that a pass^2
    # bar can never PASS where the same pass^1 bar does not (issue 22). Column k holds exactly the
    # included cases (NaN for n < k).
    metric: PassMetric = rule.kind
    graded = [c for c in ids if inp.run.tallies[c].n >= 1]
    matrix = estimate_matrix([(inp.run.tallies[c].n, inp.run.tallies[c].passes) for c in graded],
                             list(range(1, k + 1)), metric)
    groups = [inp.run.meta(c).group for c in graded]
    curve = suite_intervals(matrix, groups, seed=inp.run.seed, confidence=1 - 2 * alpha)
    iv = coherent_curve(curve, "non_increasing" if rule.kind == "pass_hat_k" else "non_decreasing")[-1]
    outcome = three_way(iv.low, iv.high, rule.min)
    reason = (f"{symbol}{k} = {iv.estimate:.3f} over {len(included)} case(s); one-sided {1 - alpha:.0%} bounds "
              f"[{iv.low:.3f}, {iv.high:.3f}] ({iv.method}) vs bar {rule.min:g}")
    if outcome == "INCONCLUSIVE":
        reason += ": the interval straddles the bar" + MORE_EITHER
    details = {"method": iv.method, "cases": iv.n_cases, "units": iv.n_units, "too_few_trials": short}
    return not_passing(Verdict(outcome, reason, iv.estimate, rule.min, iv.low, iv.high, details), inp, ids)
