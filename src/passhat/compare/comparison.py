"""``passhat compare``: the whole paired comparison of two runs as one JSON-ready dict.

Cases that newly fail are those that passed every trial in the base run and not in the candidate
(the seed's "上一版通过的题,这一版不能有新的失败"); they are listed by id, before any average can
hide them. Strata are tested separately and corrected with Holm within each tag and metric, because
a family of per-stratum tests would otherwise find a "significant" stratum by chance (statistics.md §4).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from passhat.compare.paired import MDE_ALPHA, MDE_POWER, common_max_k, compare_columns, compare_metrics
from passhat.compare.runs import LoadedRun, Matching, load_run, match_cases, require_trials
from passhat.metric_names import metric_key
from passhat.models import CaseChange, Changes, ComparedCases, Comparison, ExcludedCase, PairedMetric, StratumComparison
from passhat.models.comparison import MdeSettings
from passhat.results.summary import stratum_value, top_failure
from passhat.stats import PairedInterval, drop_test, fisher_drop, holm


def fully_passes(run: LoadedRun, case_id: str) -> bool:
    """Every graded trial passed (and there was at least one): pass^k = 1 for every k."""
    t = run.tallies[case_id]
    return t.n > 0 and t.passes == t.n


def case_changes(base: LoadedRun, cand: LoadedRun, case_ids: Sequence[str], alpha: float = 0.05,
                 seed: int = 0) -> Changes:
    """New failures, new passes, and fully passing base cases with no graded trial in the candidate.

    A new failure passed every trial in the base run and not in the candidate. Each carries ``p_value``,
    the one-sided Fisher exact test of a drop, and ``significant``: whether ``stats.drop_test`` names it at
    ``alpha`` (discrete Benjamini–Hochberg calibrated exactly under "no case dropped"; ``seed`` seeds its
    Monte Carlo, so the same runs give the same answer). Failing one trial of
    eight after 8/8 is a new failure here but not a significant one (p = 0.5): an unchanged agent does
    that all the time. The gate's ``no_new_failures`` rule decides on ``significant``.
    """
    out = Changes(new_failures=[], new_passes=[], missing=[])
    b_t, c_t = [base.tallies[c] for c in case_ids], [cand.tallies[c] for c in case_ids]
    p, p_min = fisher_drop(np.array([t.passes for t in b_t], dtype=int), np.array([t.n for t in b_t], dtype=int),
                           np.array([t.passes for t in c_t], dtype=int), np.array([t.n for t in c_t], dtype=int))
    significant = drop_test(p, p_min, alpha, rng=np.random.default_rng(seed)).rejected
    for j, (cid, b, c) in enumerate(zip(case_ids, b_t, c_t, strict=True)):
        row = CaseChange(id=cid, base=f"{b.passes}/{b.n}", candidate=f"{c.passes}/{c.n}",
                         reason=top_failure(c.failure_reasons))
        if fully_passes(base, cid) and c.n == 0:
            out.missing.append(row)
        elif fully_passes(base, cid) and not fully_passes(cand, cid):
            row.p_value, row.significant = float(p[j]), bool(significant[j])
            out.new_failures.append(row)
        elif fully_passes(cand, cid) and b.n > 0 and not fully_passes(base, cid):
            out.new_passes.append(row)
    return out


def compare_folders(
    base_folder: Path, cand_folder: Path, *, allow_changed_cases: bool = False, by: Sequence[str] = (),
    seed: int = 0, confidence: float = 0.95, interval: PairedInterval = "t",
) -> Comparison:
    """Compare CANDIDATE with BASE case by case; raises ``CompareError`` for runs that cannot be paired.

    What ``Run.compare`` returns and ``passhat compare`` prints and writes. ``interval="bca"`` asks for the
    paired BCa bootstrap instead of the t-interval (binary metrics keep Tango's score interval); ``seed``
    only matters then. See ``compare.paired``.
    """
    base, cand = require_trials(load_run(base_folder), "base"), require_trials(load_run(cand_folder), "candidate")
    matching = match_cases(base, cand, allow_changed_cases=allow_changed_cases)
    return comparison(base, cand, matching, by=by, seed=seed, confidence=confidence, interval=interval)


compare_runs = compare_folders
"""The name this function had when it returned the JSON mapping (it returns the model now)."""


def write_comparison(path: Path, result: Comparison) -> Path:
    """Write a comparison file (atomically); returns its path."""
    return result.dump(path)


def comparison(base: LoadedRun, cand: LoadedRun, matching: Matching, *, by: Sequence[str] = (),
               seed: int = 0, confidence: float = 0.95, interval: PairedInterval = "t") -> Comparison:
    """The comparison of already loaded and matched runs (``compare_folders`` without the I/O)."""
    ids = matching.case_ids
    top_k = common_max_k(base, cand, ids)
    changes = case_changes(base, cand, ids)
    return Comparison(
        base=base.describe(), candidate=cand.describe(), same_suite=matching.same_suite, confidence=confidence,
        seed=seed, interval=interval, mde=MdeSettings(alpha=MDE_ALPHA, power=MDE_POWER, two_sided=True),
        cases=ComparedCases(compared=len(ids), excluded=[ExcludedCase(id=e.case_id, reason=e.reason)
                                                         for e in matching.excluded]),
        metrics=compare_metrics(base, cand, ids, range(1, top_k + 1), seed=seed, confidence=confidence,
                                interval=interval),
        new_failures=[r.id for r in changes.new_failures], new_passes=[r.id for r in changes.new_passes],
        missing=[r.id for r in changes.missing], changes=changes,
        strata=strata(base, cand, ids, by, top_k, seed=seed, confidence=confidence, interval=interval),
    )


def strata(base: LoadedRun, cand: LoadedRun, case_ids: Sequence[str], by: Sequence[str], top_k: int, *,
           seed: int, confidence: float, interval: PairedInterval = "t") -> dict[str, dict[str, StratumComparison]]:
    """Per tag value: pass_hat_1 and pass_hat_{top k}, with Holm-adjusted p-values within each tag and metric.

    An undefined p-value (one unit, a constant non-zero difference) enters the Holm family as 1.0: it
    cannot reject, and leaving it out would make the correction of the others less strict.
    """
    ks = sorted({1, top_k}) if top_k else []
    out: dict[str, dict[str, StratumComparison]] = {}
    for key in by:
        values = sorted({v for c in case_ids if (v := stratum_value(cand.meta(c), key)) is not None})
        found: dict[str, dict[str, PairedMetric]] = {}
        sizes: dict[str, int] = {}
        for value in values:
            members = [c for c in case_ids if stratum_value(cand.meta(c), key) == value]
            sizes[value] = len(members)
            entries = compare_columns(base, cand, members, [("pass_hat_k", k) for k in ks], seed=seed,
                                      confidence=confidence, interval=interval)
            found[value] = {metric_key("pass_hat_k", k): e for k, e in zip(ks, entries, strict=True) if e is not None}
        for k in ks:
            name = metric_key("pass_hat_k", k)
            family = [metrics[name] for metrics in found.values() if name in metrics]
            if family:
                adjusted = holm([1.0 if e.p_value is None else e.p_value for e in family])
                for e, p in zip(family, adjusted, strict=True):
                    e.p_holm = p
        out[key] = {value: StratumComparison(cases=sizes[value], **found[value]) for value in values}
    return out
