"""Rules against a baseline run: no new failures, and non-inferiority within a pre-registered margin.

Both use only cases the two runs measured identically (``compare.match_cases``). Without a baseline
they are SKIPPED and say so (or the gate is refused when it sets ``require_baseline``).
"""

from __future__ import annotations

from passhat.compare import case_changes
from passhat.compare.paired import compare_metric, metric_name, paired_mde
from passhat.gate.context import GateInput
from passhat.gate.model import NoNewFailures, NonInferior
from passhat.gate.outcome import Outcome, Verdict

NO_BASELINE = Verdict("SKIPPED", "needs a baseline run (--baseline RUN); not evaluated")


def _excluded_note(inp: GateInput) -> str:
    excluded = inp.matching.excluded if inp.matching else []
    return f" ({len(excluded)} changed case(s) excluded from the comparison)" if excluded else ""


def no_new_failures(rule: NoNewFailures, inp: GateInput, alpha: float) -> Verdict:
    """FAIL if a case that passed every trial in the baseline fails a trial now."""
    if inp.baseline is None:
        return NO_BASELINE
    ids = inp.paired(rule.select)
    if not ids:
        return Verdict("INCONCLUSIVE", f"no selected case is comparable with the baseline{_excluded_note(inp)}")
    changes = case_changes(inp.baseline, inp.run, ids)
    new, missing = changes["new_failures"], changes["missing"]
    details = {"new_failures": new, "missing": missing, "new_passes": changes["new_passes"], "cases": len(ids)}
    if new:
        listed = ", ".join(f"{r['id']} ({r['base']} → {r['candidate']})" for r in new[:10])
        listed += f" and {len(new) - 10} more" if len(new) > 10 else ""
        return Verdict("FAIL", f"{len(new)} case(s) passed every trial in the baseline and fail now: {listed}",
                       len(new), 0, details=details)
    if missing:
        return Verdict("INCONCLUSIVE", "no graded trial now for case(s) that passed in the baseline: "
                       + ", ".join(r["id"] for r in missing), 0, 0, details=details)
    return Verdict("PASS", f"no new failure among {len(ids)} comparable case(s){_excluded_note(inp)}", 0, 0,
                   details=details)


def non_inferior(rule: NonInferior, inp: GateInput, alpha: float) -> Verdict:
    """PASS if the one-sided (1 − α) lower bound of the mean difference > −margin; FAIL if the upper < −margin.

    The bounds are the ends of the two-sided (1 − 2α) paired interval of ``passhat compare`` (t over
    cases, cluster-robust with groups; Tango's score interval for 0/1 metrics), i.e. the one-sided
    t-test (or score test) of Δ ≤ −margin at level α. The MDE in the reason is for that one-sided test.
    """
    if inp.baseline is None:
        return NO_BASELINE
    ids = inp.paired(rule.select)
    name = metric_name(rule.metric, rule.k)
    entry = compare_metric(inp.baseline, inp.run, ids, rule.metric, rule.k, seed=inp.run.seed,
                           confidence=1 - 2 * alpha) if ids else None
    bar = -rule.margin
    if entry is None:
        return Verdict("INCONCLUSIVE", f"no selected case has {rule.k} graded trial(s) in both runs{_excluded_note(inp)}",
                       bar=bar)
    low, high, delta = entry["ci_low"], entry["ci_high"], entry["delta"]
    outcome: Outcome
    if low > bar:
        outcome = "PASS"
    elif high < bar:
        outcome = "FAIL"
    else:
        outcome = "INCONCLUSIVE"
    mde = paired_mde(entry["se"], entry["units"], alpha=alpha, two_sided=False)
    reason = (f"{name}: candidate − baseline = {delta:+.3f} over {entry['cases']} case(s); one-sided {1 - alpha:.0%} "
              f"bounds [{low:+.3f}, {high:+.3f}] ({entry['method']}) vs margin −{rule.margin:g}{_excluded_note(inp)}")
    if outcome == "INCONCLUSIVE":
        reason += ": the interval straddles the margin" + (f" (one-sided MDE at this size ≈ {mde:.3f})" if mde else
                                                            "; more cases would narrow it")
    details = {k: entry[k] for k in ("base", "candidate", "p_value", "test", "method", "cases", "units", "se",
                                     "correlation", "excluded")}
    return Verdict(outcome, reason, delta, bar, low, high, {**details, "mde": mde})
