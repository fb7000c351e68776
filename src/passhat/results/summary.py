"""summary.json: per-case and suite pass^k / pass@k for every k, with honest uncertainty.

Per case, pass^k = C(c,k)/C(n,k) and pass@k = 1 − C(n−c,k)/C(n,k) with exact integers, plus a Wilson
interval on the per-trial success rate. The suite value is the unweighted mean over the cases with at
least k graded trials (the others are listed as excluded for that k, never silently counted), with a
seeded BCa bootstrap over cases — whole groups resampled together — and the fixed-suite standard
error where n ≥ 2k. Infrastructure errors are counted apart and never shrink n silently.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from passhat.results.tally import CaseTally, tally
from passhat.runner.records import TrialRecord
from passhat.runner.store import RunStore
from passhat.stats import Distribution, fixed_suite_se, suite_intervals, wilson
from passhat.stats.passk import (
    pass_at_k,
    pass_hat_k,
    unbiased_variance_pass_at_k,
    unbiased_variance_pass_hat_k,
)

METRICS = {"pass_hat_k": (pass_hat_k, unbiased_variance_pass_hat_k),
           "pass_at_k": (pass_at_k, unbiased_variance_pass_at_k)}
CONFIDENCE = 0.95
RESAMPLES = 2000


def _dist(values: Sequence[float]) -> dict[str, float] | None:
    d = Distribution.of(values)
    return None if d is None else {"n": d.n, "mean": d.mean, "p50": d.p50, "p95": d.p95, "max": d.max}


def case_entry(t: CaseTally, meta: dict[str, Any]) -> dict[str, Any]:
    low, high = wilson(t.passes, t.n, CONFIDENCE) if t.n else (None, None)
    return {
        "id": t.case_id,
        "n": t.n,
        "successes": t.passes,
        "errors": t.errors,
        "pass_hat_k": {str(k): pass_hat_k(t.n, t.passes, k) for k in range(1, t.n + 1)},
        "pass_at_k": {str(k): pass_at_k(t.n, t.passes, k) for k in range(1, t.n + 1)},
        "wilson_low": low,
        "wilson_high": high,
        "tags": meta.get("tags", {}),
        "group": meta.get("group"),
        "split": meta.get("split"),
        "latency_s": _dist(t.latencies),
        "cost": _dist(t.costs),
        "steps": _dist(t.steps),
        "top_failure": top_failure(t.failure_reasons),
        "failure_categories": dict(sorted(t.categories.items(), key=lambda kv: -kv[1])),
    }


def top_failure(reasons: Sequence[str]) -> str | None:
    """The most common failure reason; ties go to the one seen first, so reruns print the same line.

    (``max(set(reasons), key=reasons.count)`` broke ties by set order, which changes with Python's hash
    seed from one process to the next.)
    """
    return Counter(reasons).most_common(1)[0][0] if reasons else None


def _metric_block(tallies: list[CaseTally], cases: list[dict[str, Any]], metric: str, seed: int) -> dict[str, Any]:
    max_k = max((t.n for t in tallies), default=0)
    ks = list(range(1, max_k + 1))
    if not ks:
        return {}
    estimator, variance = METRICS[metric]
    matrix = np.array([[estimator(t.n, t.passes, k) if t.n >= k else np.nan for k in ks] for t in tallies], dtype=float)
    groups = [c["group"] for c in cases]
    intervals = suite_intervals(matrix, groups, seed=seed, confidence=CONFIDENCE, n_resamples=RESAMPLES)
    block: dict[str, Any] = {}
    for j, k in enumerate(ks):
        included = [t for t in tallies if t.n >= k]
        iv = intervals[j]
        block[str(k)] = {
            "estimate": iv.estimate,
            "ci_low": iv.low,
            "ci_high": iv.high,
            "method": iv.method,
            "cases": len(included),
            "units": iv.n_units,
            "excluded": [t.case_id for t in tallies if t.n < k],
            "fixed_suite_se": fixed_suite_se([variance(t.n, t.passes, k) for t in included]),
        }
    return block


def _experience(tallies: list[CaseTally]) -> dict[str, Any]:
    lat = [x for t in tallies for x in t.latencies]
    costs = [x for t in tallies for x in t.costs]
    successes = sum(t.passes for t in tallies)
    # the run's cost includes the model-played user and the judge, shown apart from the agent's
    parts = {"agent": float(sum(costs)), "user": float(sum(x for t in tallies for x in t.user_costs)),
             "judge": float(sum(x for t in tallies for x in t.judge_costs))}
    total = sum(parts.values())
    return {
        "latency_s": _dist(lat),
        "ttft_s": _dist([x for t in tallies for x in t.ttft]),
        "cost_per_trial": _dist(costs),
        "tokens_per_trial": _dist([x for t in tallies for x in t.tokens]),
        "steps_per_trial": _dist([x for t in tallies for x in t.steps]),
        "total_cost": total,
        "cost_per_success": total / successes if successes else None,
        "cost_by_role": parts,
        "cost_per_success_by_role": {k: v / successes if successes else None for k, v in parts.items()},
    }


def suite_block(tallies: list[CaseTally], cases: list[dict[str, Any]], seed: int) -> dict[str, Any]:
    """Suite-level figures for a set of cases (the whole suite or one stratum)."""
    return {
        "cases": len(cases),
        "trials": sum(t.n for t in tallies),
        "errors": sum(t.errors for t in tallies),
        "pass_hat_k": _metric_block(tallies, cases, "pass_hat_k", seed),
        "pass_at_k": _metric_block(tallies, cases, "pass_at_k", seed),
        "experience": _experience(tallies),
        "failure_categories": _categories(tallies),
    }


def _categories(tallies: list[CaseTally]) -> dict[str, int]:
    total: dict[str, int] = {}
    for t in tallies:
        for k, v in t.categories.items():
            total[k] = total.get(k, 0) + v
    return dict(sorted(total.items(), key=lambda kv: -kv[1]))


def build_summary(
    records: Iterable[TrialRecord], manifest: dict[str, Any], *, by: Sequence[str] = (), seed: int | None = None,
    split: str | None = None,
) -> dict[str, Any]:
    """The summary of a run's records for the cases named in its manifest.

    ``by`` lists tag names to break every figure down by (``split`` and ``group`` work too). The
    bootstrap seed defaults to the run seed, so the same run always reports the same intervals.
    ``split`` restricts every figure to the cases of that split. Trials whose external tools were
    answered from a cassette are counted (``replayed_trials``; per case, ``replayed``).
    """
    suite = manifest["suite"]
    meta: dict[str, Any] = suite.get("case_meta", {})
    ids = [cid for cid in suite["cases"] if split is None or meta.get(cid, {}).get("split") == split]
    replayed: dict[str, int] = {}
    wanted = set(ids)
    kept = _note_replayed((r for r in records if split is None or r.case_id in wanted), replayed)
    tallies = list(tally(kept, ids).values())
    cases = [{**case_entry(t, meta.get(t.case_id, {})), "replayed": replayed.get(t.case_id, 0)} for t in tallies]
    boot_seed = manifest.get("seed", 0) if seed is None else seed
    summary = {
        "suite": {
            "name": suite["name"],
            "hash": suite["hash"],
            "trials_per_case": manifest["trials"],
            "confidence": CONFIDENCE,
            "bootstrap": {"seed": boot_seed, "resamples": RESAMPLES, "unit": "case (groups resampled whole)"},
            **suite_block(tallies, cases, boot_seed),
            "replayed_trials": sum(replayed.values()),
            **({"split": split} if split is not None else {}),
        },
        "agent": manifest["agent"],
        "cases": cases,
    }
    if by:
        summary["strata"] = strata(tallies, cases, by, boot_seed)
    return summary


def _note_replayed(records: Iterable[TrialRecord], counts: dict[str, int]) -> Iterable[TrialRecord]:
    """Pass records through, counting per case those that ran on replayed external tools."""
    for r in records:
        if r.replayed:
            counts[r.case_id] = counts.get(r.case_id, 0) + 1
        yield r


def stratum_value(case: dict[str, Any], key: str) -> str | None:
    """The stratum a case belongs to for ``key``: a tag value, or its split or group."""
    if key in ("split", "group"):
        return case.get(key)
    value: str | None = case["tags"].get(key)
    return value


def strata(tallies: list[CaseTally], cases: list[dict[str, Any]], by: Sequence[str], seed: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key in by:
        values = sorted({v for c in cases if (v := stratum_value(c, key)) is not None})
        out[key] = {}
        for value in values:
            idx = [i for i, c in enumerate(cases) if stratum_value(c, key) == value]
            out[key][value] = suite_block([tallies[i] for i in idx], [cases[i] for i in idx], seed)
    return out


def tag_keys(manifest: dict[str, Any]) -> list[str]:
    """Every tag key any case carries, in first-seen order: the default strata of reports."""
    keys: dict[str, None] = {}
    for meta in manifest["suite"].get("case_meta", {}).values():
        keys.update(dict.fromkeys(meta.get("tags", {})))
    return list(keys)


def summarize_run(folder: Any, *, by: Sequence[str] = ()) -> dict[str, Any]:
    """Build ``summary.json`` for a run folder from its records and write it; returns the summary."""
    store = RunStore(folder)
    summary = build_summary(store.iter_records(), store.read_manifest(), by=by)
    store.write_summary(summary)
    return summary
