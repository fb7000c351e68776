"""Rules against a baseline run: no new failures, and non-inferiority within a pre-registered margin.

Both use only cases the two runs measured identically (``compare.match_cases``). Without a baseline
they are SKIPPED and say so (or the gate is refused when it sets ``require_baseline``).
"""

from __future__ import annotations

import math
from typing import Any

from passhat.compare import case_changes
from passhat.compare.paired import compare_metric, paired_mde
from passhat.gate.context import GateInput
from passhat.gate.model import NoNewFailures, NonInferior
from passhat.gate.outcome import Outcome, Verdict
from passhat.gate.rules_cases import listed, not_passing
from passhat.metric_names import metric_key
from passhat.models import CaseChange

NO_BASELINE = Verdict("SKIPPED", "needs a baseline run (--baseline RUN); not evaluated")
EVIDENCE = {"base", "candidate", "p_value", "test", "p_test", "p_pseudocase", "method", "cases", "units", "se",
            "correlation", "excluded"}
"""The fields of the paired difference that a ``non_inferior`` result keeps in its ``details``."""


def _excluded_note(inp: GateInput) -> str:
    excluded = inp.matching.excluded if inp.matching else []
    return f" ({len(excluded)} changed case(s) excluded from the comparison)" if excluded else ""


def no_new_failures(rule: NoNewFailures, inp: GateInput, alpha: float) -> Verdict:
    """FAIL if a case that passed every baseline trial now passes significantly less often.

    Per case, the one-sided Fisher exact test of a drop; across cases, Heyse's discrete Benjamini–Hochberg
    calibrated exactly under "no case dropped", so an unchanged agent fails this rule at most α of the time
    (``stats.regressions``). One failed trial of eight on a case that passed 8/8 is not significant (p =
    0.5); 8/8 → 0/8 is (p = 0.00008). PASS says no case dropped significantly; the reason names the cases
    that failed a trial anyway.
    """
    if inp.baseline is None:
        return NO_BASELINE
    ids = inp.paired(rule.select)
    if not ids:
        return Verdict("INCONCLUSIVE", f"no selected case is comparable with the baseline{_excluded_note(inp)}")
    changes = case_changes(inp.baseline, inp.run, ids, alpha)
    new = [r for r in changes.new_failures if r.significant]
    chance = [r for r in changes.new_failures if not r.significant]
    details = {"new_failures": _rows(new), "failed_a_trial": _rows(chance), "missing": _rows(changes.missing),
               "new_passes": _rows(changes.new_passes), "cases": len(ids)}
    if new:
        shown = listed([f"{r.id} ({r.base} → {r.candidate}, p = {r.p_value:.2g})" for r in new])
        return Verdict("FAIL", f"{len(new)} case(s) passed every trial in the baseline and now pass significantly "
                       f"less often (one-sided Fisher exact test per case, discrete Benjamini–Hochberg at α = {alpha:g}, "
                       f"which weighs the cases' drops together: several small ones can be significant where none "
                       f"is alone): {shown}", len(new), 0, details=details)
    if changes.missing:
        return Verdict("INCONCLUSIVE", "no graded trial now for case(s) that passed in the baseline: "
                       + listed([r.id for r in changes.missing]), 0, 0, details=details)
    b, c = inp.baseline.tallies, inp.run.tallies
    reliable = [cid for cid in ids if b[cid].n and b[cid].passes == b[cid].n and c[cid].n]
    if reliable and all(1 / math.comb(b[cid].n + c[cid].n, c[cid].n) > alpha for cid in reliable):
        return Verdict("INCONCLUSIVE", "too few trials to show a new failure of one case: even a case that failed "
                       f"every trial now would not be significant alone at α = {alpha:g} (3 graded trials per case in "
                       "each run are the minimum; several such drops together can be)", 0, 0, details=details)
    also = (f"; {len(chance)} case(s) failed a trial without a significant drop: "
            + listed([f"{r.id} ({r.base} → {r.candidate}, p = {r.p_value:.2g})" for r in chance])
            if chance else "")
    verdict = Verdict("PASS", f"no case that passed every baseline trial dropped significantly among {len(ids)} "
                      f"comparable case(s){_excluded_note(inp)}{also}", 0, 0, details=details)
    return not_passing(verdict, inp, ids)


def non_inferior(rule: NonInferior, inp: GateInput, alpha: float) -> Verdict:
    """PASS if the one-sided (1 − α) lower bound of the mean difference > −margin; FAIL if the upper < −margin.

    The bounds are the ends of the two-sided (1 − 2α) paired interval of ``passhat compare`` (t over
    cases, cluster-robust with groups; Tango's score interval for 0/1 metrics), i.e. the one-sided
    t-test (or score test) of Δ ≤ −margin at level α. The MDE in the reason is for that one-sided test.
    """
    if inp.baseline is None:
        return NO_BASELINE
    ids = inp.paired(rule.select)
    name = metric_key(rule.metric, rule.k)
    entry = compare_metric(inp.baseline, inp.run, ids, rule.metric, rule.k, seed=inp.run.seed,
                           confidence=1 - 2 * alpha) if ids else None
    bar = -rule.margin
    if entry is None:
        return Verdict("INCONCLUSIVE", f"no selected case has {rule.k} graded trial(s) in both runs{_excluded_note(inp)}",
                       bar=bar)
    low, high, delta = entry.ci_low, entry.ci_high, entry.delta
    outcome: Outcome
    if low > bar:
        outcome = "PASS"
    elif high < bar:
        outcome = "FAIL"
    else:
        outcome = "INCONCLUSIVE"
    mde = paired_mde(entry.se, entry.units, alpha=alpha, two_sided=False)
    reason = (f"{name}: candidate − baseline = {delta:+.3f} over {entry.cases} case(s); one-sided {1 - alpha:.0%} "
              f"bounds [{low:+.3f}, {high:+.3f}] ({entry.method}) vs margin −{rule.margin:g}{_excluded_note(inp)}")
    if outcome == "INCONCLUSIVE":
        reason += ": the interval straddles the margin" + (f" (one-sided MDE at this size ≈ {mde:.3f})" if mde else
                                                            "; more cases would narrow it")
    details = entry.model_dump(include=EVIDENCE)
    return not_passing(Verdict(outcome, reason, delta, bar, low, high, {**details, "mde": mde}), inp, ids)



def _rows(changes: list[CaseChange]) -> list[dict[str, Any]]:
    """Changed cases as a rule's ``details`` hold them (the fields each has)."""
    return [c.model_dump(exclude_unset=True) for c in changes]
