"""summary.json: per-case and suite pass^k / pass@k for every k, with honest uncertainty.

Per case, pass^k = C(c,k)/C(n,k) and pass@k = 1 − C(n−c,k)/C(n,k) with exact integers, plus a Wilson
interval on the per-trial success rate. The suite value is the unweighted mean over the cases with at
least k graded trials (the others are listed as excluded for that k, never silently counted), with
Gaffke's interval over cases (``stats.bootstrap``: seeded draws, a group of cases as one unit, made coherent
across k) and the fixed-suite standard error where n ≥ 2k. Infrastructure errors are counted apart and never shrink n silently.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from passhat.models import CaseMeta, CaseSummary, Experience, Interval, Manifest, StratumSummary, SuiteSummary, Summary
from passhat.models.summary import Bootstrap
from passhat.models.summary import Distribution as DistributionSummary
from passhat.results.tally import CaseTally, ReportedTally, TallySource, tally, tally_records
from passhat.results.written import written_summary
from passhat.runner.store import RunStore
from passhat.stats import Distribution, coherent_curve, estimate_matrix, fixed_suite_se, suite_intervals, wilson
from passhat.stats.passk import (
    pass_at_k,
    pass_hat_k,
    unbiased_variance_pass_at_k,
    unbiased_variance_pass_hat_k,
)

METRICS = {"pass_hat_k": (pass_hat_k, unbiased_variance_pass_hat_k),
           "pass_at_k": (pass_at_k, unbiased_variance_pass_at_k)}
CONFIDENCE = 0.95
RESAMPLES = 4000
SUMMARY_SCHEMA = Summary.schema_id()
"""Written into every summary (``schema_version``); bumped when its numbers are computed differently or its
shape changes (2: intervals united with the pseudo-case interval, issue 10; 3: the version under
``schema_version``, read through ``models.Summary``), so a summary from an older passhat is recomputed,
not reused."""


def _dist(values: Sequence[float]) -> DistributionSummary | None:
    d = Distribution.of(values)
    return None if d is None else DistributionSummary(n=d.n, mean=d.mean, p50=d.p50, p95=d.p95, max=d.max)


@lru_cache(maxsize=4096)
def _curves(n: int, c: int) -> tuple[dict[int, float], dict[int, float]]:
    """Per-case pass^k and pass@k for k = 1..n; 10,000 cases of 16 trials have at most 17 distinct (n, c)."""
    return ({k: pass_hat_k(n, c, k) for k in range(1, n + 1)}, {k: pass_at_k(n, c, k) for k in range(1, n + 1)})


def case_entry(t: CaseTally, meta: CaseMeta) -> CaseSummary:
    """One case's summary (every field given, so that summary.json holds each of them)."""
    low, high = wilson(t.passes, t.n, CONFIDENCE) if t.n else (None, None)
    hat, at = _curves(t.n, t.passes)
    untested: dict[str, Any] = {"faults_not_applied": dict(t.faults_not_applied)} if t.faults_not_applied else {}
    missed = {fault: t.n - t.faults_acted.get(fault, 0) for fault in meta.faults}
    if any(missed.values()):  # set only then, so a run whose every fault was reached has the summary it had
        untested["faults_not_reached"] = {fault: k for fault, k in missed.items() if k}
    return CaseSummary(
        id=t.case_id, n=t.n, successes=t.passes, errors=t.errors, pass_hat_k=hat, pass_at_k=at, wilson_low=low,
        wilson_high=high, tags=meta.tags, group=meta.group, split=meta.split, latency_s=_dist(t.latencies),
        cost=_dist(t.costs), steps=_dist(t.steps), top_failure=top_failure(t.failure_reasons),
        top_failure_trial=top_failure_trial(t.failure_reasons, t.failure_trials),
        failure_categories=dict(sorted(t.categories.items(), key=lambda kv: -kv[1])), **untested, replayed=t.replayed,
    )


def top_failure(reasons: Sequence[str]) -> str | None:
    """The most common failure reason; ties go to the one seen first, so reruns print the same line.

    (``max(set(reasons), key=reasons.count)`` broke ties by set order, which changes with Python's hash
    seed from one process to the next.)
    """
    return Counter(reasons).most_common(1)[0][0] if reasons else None


def top_failure_trial(reasons: Sequence[str], trials: Sequence[int]) -> int | None:
    """The lowest trial that failed with :func:`top_failure`'s reason (where a report points for the details):
    the lowest, not the first recorded, so runs whose trials finished in another order (Ray) agree. None
    when the trials are not known (a tally built by hand)."""
    top = top_failure(reasons)
    if top is None or len(trials) != len(reasons):
        return None
    return min(t for r, t in zip(reasons, trials, strict=True) if r == top)


@lru_cache(maxsize=65536)
def _variance(metric: str, n: int, c: int, k: int) -> float | None:
    return METRICS[metric][1](n, c, k)


def _metric_blocks(tallies: list[CaseTally], cases: list[CaseSummary],
                   seed: int, confidence: float = CONFIDENCE) -> tuple[dict[int, Interval], dict[int, Interval]]:
    """The pass^k and pass@k curves, k = 1..max n, every column on the same bootstrap resamples."""
    max_k = max((t.n for t in tallies), default=0)
    ks = list(range(1, max_k + 1))
    if not ks:
        return {}, {}
    counts = [(t.n, t.passes) for t in tallies]
    matrix = np.hstack([estimate_matrix(counts, ks, "pass_hat_k"), estimate_matrix(counts, ks, "pass_at_k")])
    intervals = suite_intervals(matrix, [c.group for c in cases], seed=seed, confidence=confidence,
                                n_resamples=RESAMPLES)
    # Bounds monotone in k and containing their estimate (issue 22): pass^k falls with k, pass@k rises.
    width = len(ks)
    intervals = (coherent_curve(intervals[:width], "non_increasing")
                 + coherent_curve(intervals[width:], "non_decreasing"))
    excluded = _excluded(tallies, ks)
    pairs = tuple(Counter(counts).items())  # the fixed-suite SE sums per-case variances; equal (n, c) share one
    curves: list[dict[int, Interval]] = []
    for offset, metric in enumerate(("pass_hat_k", "pass_at_k")):
        curve: dict[int, Interval] = {}
        for j, (k, se) in enumerate(zip(ks, _se_curve(metric, pairs, max_k), strict=True)):
            iv = intervals[offset * len(ks) + j]
            curve[k] = Interval(estimate=iv.estimate, ci_low=iv.low, ci_high=iv.high, method=iv.method,
                                cases=iv.n_cases, units=iv.n_units, excluded=excluded[j], fixed_suite_se=se)
        curves.append(curve)
    return curves[0], curves[1]


def _excluded(tallies: list[CaseTally], ks: list[int]) -> list[list[str]]:
    """Per k, the cases with fewer than k graded trials, in the tallies' order. The list changes only past a
    case's n, so it is rebuilt there only (a summary asks for 25 curves of 64 k, mostly with no case excluded)."""
    ns = {t.n for t in tallies}
    out: list[list[str]] = []
    current: list[str] = []
    for k in ks:
        if k - 1 in ns:
            current = [t.case_id for t in tallies if t.n < k]
        out.append(current)
    return out


@lru_cache(maxsize=1024)
def _se_curve(metric: str, pairs: tuple[tuple[tuple[int, int], int], ...], max_k: int) -> tuple[float | None, ...]:
    """The fixed-suite SE for k = 1..max_k of the cases counted in ``pairs`` ((n, c) → cases). Strata whose
    cases have the same (n, c) counts share it (all-pass strata of one size, say)."""
    return tuple(_fixed_suite_se([(_variance(metric, nn, c, k), m) for (nn, c), m in pairs if nn >= k])
                 for k in range(1, max_k + 1))


def _fixed_suite_se(variances: list[tuple[float | None, int]]) -> float | None:
    """``stats.fixed_suite_se`` over (variance, multiplicity) pairs."""
    if not variances or any(v is None for v, _ in variances):
        return None
    return fixed_suite_se([v for v, _ in variances], [m for _, m in variances])


def _experience(tallies: list[CaseTally]) -> Experience:
    lat = [x for t in tallies for x in t.latencies]
    costs = [x for t in tallies for x in t.costs]
    successes = sum(t.passes for t in tallies)
    # the run's cost includes the model-played user and the judge, shown apart from the agent's
    parts = {"agent": float(sum(costs)), "user": float(sum(x for t in tallies for x in t.user_costs)),
             "judge": float(sum(x for t in tallies for x in t.judge_costs))}
    total = sum(parts.values())
    return Experience(
        latency_s=_dist(lat), ttft_s=_dist([x for t in tallies for x in t.ttft]), cost_per_trial=_dist(costs),
        tokens_per_trial=_dist([x for t in tallies for x in t.tokens]),
        steps_per_trial=_dist([x for t in tallies for x in t.steps]), total_cost=total,
        cost_per_success=total / successes if successes else None, cost_by_role=parts,
        cost_per_success_by_role={k: v / successes if successes else None for k, v in parts.items()},
    )


def _figures(tallies: list[CaseTally], cases: list[CaseSummary], seed: int,
             confidence: float = CONFIDENCE) -> dict[str, Any]:
    """The fields of a :class:`StratumSummary` for a set of cases (the whole suite or one stratum)."""
    hat, at = _metric_blocks(tallies, cases, seed, confidence)
    return {"cases": len(cases), "trials": sum(t.n for t in tallies), "errors": sum(t.errors for t in tallies),
            "pass_hat_k": hat, "pass_at_k": at, "experience": _experience(tallies),
            "failure_categories": _categories(tallies)}


def suite_block(tallies: list[CaseTally], cases: list[CaseSummary], seed: int,
                confidence: float = CONFIDENCE) -> StratumSummary:
    """Suite-level figures for a set of cases (the whole suite or one stratum)."""
    return StratumSummary(**_figures(tallies, cases, seed, confidence))


def _categories(tallies: list[CaseTally]) -> dict[str, int]:
    total: dict[str, int] = {}
    for t in tallies:
        for k, v in t.categories.items():
            total[k] = total.get(k, 0) + v
    return dict(sorted(total.items(), key=lambda kv: -kv[1]))


def build_summary(
    records: Iterable[TallySource], manifest: Manifest, *, by: Sequence[str] = (), seed: int | None = None,
    splits: Sequence[str] = (), trials_bytes: int | None = None,
) -> Summary:
    """The summary of a run's records for the cases named in its manifest.

    ``records`` are ``TrialRecord`` objects or, from ``results.tally.tally_records``, just the fields a
    summary reads (10,000 cases × 16 trials: ≈ 1 s of statistics instead of 15 s).

    ``by`` lists tag names to break every figure down by (``split`` and ``group`` work too). The
    bootstrap seed defaults to the run seed, so the same run always reports the same intervals.
    ``splits`` restricts every figure to the cases of any of those splits (``suite.split`` names them).
    Trials whose external tools were answered from a cassette are counted (``replayed_trials``; per case,
    ``replayed``). ``trials_bytes`` is the size of the trials.jsonl the records were read from.
    """
    ids = [cid for cid in manifest.suite.cases if not splits or manifest.case_meta(cid).split in splits]
    wanted = set(ids)
    tallies = list(tally(records if not splits else (r for r in records if r.case_id in wanted), ids).values())
    return summary_of_tallies(tallies, manifest, by=by, seed=seed, splits=splits, trials_bytes=trials_bytes)


def summary_of_tallies(
    tallies: list[CaseTally], manifest: Manifest, *, by: Sequence[str] = (), seed: int | None = None,
    splits: Sequence[str] = (), trials_bytes: int | None = None,
) -> Summary:
    """:func:`build_summary` of the records these tallies counted (``splits`` only names the restriction: the
    tallies are of those cases already)."""
    cases = [case_entry(t, manifest.case_meta(t.case_id)) for t in tallies]
    boot_seed = manifest.seed if seed is None else seed
    restricted: dict[str, Any] = {"split": "|".join(splits)} if splits else {}  # set only then, as the file holds it
    confidence, per_case = sequential_view(manifest)
    suite = SuiteSummary(
        name=manifest.suite.name, hash=manifest.suite.hash, trials_per_case=per_case, confidence=confidence,
        bootstrap=Bootstrap(seed=boot_seed, resamples=RESAMPLES, unit="case (groups resampled whole)"),
        **_figures(tallies, cases, boot_seed, confidence), replayed_trials=sum(t.replayed for t in tallies),
        **restricted,
    )
    more: dict[str, Any] = {"strata": strata(tallies, cases, by, boot_seed, confidence)} if by else {}
    if trials_bytes is not None:
        more["trials_bytes"] = trials_bytes
    if manifest.sequential is not None:
        more["sequential"] = manifest.sequential
    return Summary(suite=suite, agent=manifest.agent, cases=cases, **more)


def sequential_view(manifest: Manifest) -> tuple[float, int]:
    """(confidence of the suite intervals, trials per case) for the summary.

    A fixed run: 0.95 and the planned trials. A sequential run: the repeated confidence interval of the
    look it stopped at (or last took), which covers at every look together and so at the one the stopping
    rule chose (``Sequential.confidence``), and that look's trials per case.
    """
    block = manifest.sequential
    if block is None or not block.looks:
        return CONFIDENCE, manifest.trials
    if block.stopped is not None:
        return block.stopped.confidence, block.stopped.trials_per_case
    from passhat.sequential.design import Sequential  # only sequential runs need the boundaries

    last = block.looks[-1]
    return Sequential.from_record(block.design).confidence(last.look - 1), last.trials_per_case


def stratum_value(case: CaseMeta | CaseSummary, key: str) -> str | None:
    """The stratum a case belongs to for ``key``: a tag value, or its split or group."""
    if key == "split":
        return case.split
    if key == "group":
        return case.group
    return case.tags.get(key)


def strata(tallies: list[CaseTally], cases: list[CaseSummary], by: Sequence[str],
           seed: int, confidence: float = CONFIDENCE) -> dict[str, dict[str, StratumSummary]]:
    out: dict[str, dict[str, StratumSummary]] = {}
    for key in by:
        members: dict[str, list[int]] = {}
        for i, c in enumerate(cases):
            if (v := stratum_value(c, key)) is not None:
                members.setdefault(v, []).append(i)
        out[key] = {value: suite_block([tallies[i] for i in members[value]], [cases[i] for i in members[value]], seed,
                                       confidence) for value in sorted(members)}
    return out


def tag_keys(manifest: Manifest) -> list[str]:
    """Every tag key any case carries, in first-seen order: the default strata of reports."""
    keys: dict[str, None] = {}
    for meta in manifest.suite.case_meta.values():
        keys.update(dict.fromkeys(meta.tags))
    return list(keys)


def read_current_summary(folder: Path, by: Sequence[str] = ()) -> Summary | None:
    """The run's ``summary.json`` when it is the summary of exactly the records now in ``trials.jsonl``.

    "Current" is decided by ``results.written.written_summary`` (one definition for every reader): of the
    current schema version (``SUMMARY_SCHEMA``), not older than trials.jsonl, computed from a trials.jsonl
    of the size it has now (or counting every complete record line, Σ n + errors, when it does not say),
    for the whole run (no split) and with every stratum in ``by``. Otherwise None, and the caller
    recomputes. ``passhat run`` writes it at the end of a run, so showing a finished run reads ≈ 10 MB
    instead of re-reading 1.2 GB of trajectories. A summary of another version, or one that does not
    validate, is not an error here: it is derived data, recomputed.
    """
    return written_summary(folder, by, invalid="recompute")


current_summary = read_current_summary
"""The name this function had when it returned the JSON mapping (it returns the model now)."""


def read_summary(folder: Path, by: Sequence[str] = ()) -> Summary:
    """The run's summary: ``summary.json`` when current (:func:`read_current_summary`), else recomputed from
    the tally fields of ``trials.jsonl`` (not written)."""
    current = read_current_summary(folder, by)
    if current is not None:
        return current
    store = RunStore(Path(folder))
    return build_summary(tally_records(store.trials_path), store.manifest(), by=by)


def summary_of_records_file(store: RunStore, manifest: Manifest, *, by: Sequence[str] = (),
                            reported: ReportedTally | None = None) -> Summary:
    """``build_summary`` over the tally fields of the store's trials.jsonl, with the file's size taken first
    (``trials_bytes``): records appended while it is read make the file larger than the summary says, so
    the summary is never taken for current when it missed one. ``reported``: the run's own tallies of the
    records it wrote, used instead of reading the file back where they are exactly what it holds."""
    size = store.trials_path.stat().st_size
    tallies = reported.tallies(store.trials_path, manifest.suite.cases) if reported is not None else None
    if tallies is None:
        return build_summary(tally_records(store.trials_path), manifest, by=by, trials_bytes=size)
    return summary_of_tallies(list(tallies.values()), manifest, by=by, trials_bytes=size)


def summarize_run(folder: Any, *, by: Sequence[str] = ()) -> Summary:
    """Build ``summary.json`` for a run folder from its records and write it; returns the summary.

    Reads only the fields a summary uses (``tally_records``), never whole trajectories.
    """
    store = RunStore(Path(folder))
    summary = summary_of_records_file(store, store.manifest(), by=by)
    store.write_summary(summary)
    return summary
