"""summary.json: per-case and suite pass^k / pass@k for every k, computed from the records.

Per case, pass^k = C(c,k)/C(n,k) and pass@k = 1 − C(n−c,k)/C(n,k) with exact integers; the suite value
is the unweighted mean over the cases that have at least k graded trials (cases with fewer are
listed as excluded for that k, never silently counted).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from passhat.results.tally import CaseTally, tally
from passhat.runner.records import TrialRecord
from passhat.stats.passk import pass_at_k, pass_hat_k


def case_entry(t: CaseTally) -> dict[str, Any]:
    return {
        "id": t.case_id,
        "n": t.n,
        "successes": t.passes,
        "errors": t.errors,
        "pass_hat_k": {str(k): pass_hat_k(t.n, t.passes, k) for k in range(1, t.n + 1)},
        "pass_at_k": {str(k): pass_at_k(t.n, t.passes, k) for k in range(1, t.n + 1)},
        "top_failure": max(set(t.failure_reasons), key=t.failure_reasons.count) if t.failure_reasons else None,
    }


def suite_metric(cases: list[dict[str, Any]], metric: str, k: int) -> dict[str, Any]:
    values = [c[metric][str(k)] for c in cases if str(k) in c[metric]]
    excluded = [c["id"] for c in cases if str(k) not in c[metric]]
    return {
        "estimate": sum(values) / len(values) if values else None,
        "cases": len(values),
        "excluded": excluded,
    }


def build_summary(
    records: Iterable[TrialRecord], manifest: dict[str, Any]
) -> dict[str, Any]:
    """The summary of a run folder's records, for the cases named in its manifest."""
    suite = manifest["suite"]
    tallies = tally(records, suite["cases"].keys())
    cases = [case_entry(t) for t in tallies.values()]
    max_k = max((c["n"] for c in cases), default=0)
    return {
        "suite": {
            "name": suite["name"],
            "hash": suite["hash"],
            "cases": len(cases),
            "trials_per_case": manifest["trials"],
            "errors": sum(c["errors"] for c in cases),
            "pass_hat_k": {str(k): suite_metric(cases, "pass_hat_k", k) for k in range(1, max_k + 1)},
            "pass_at_k": {str(k): suite_metric(cases, "pass_at_k", k) for k in range(1, max_k + 1)},
        },
        "agent": manifest["agent"],
        "cases": cases,
    }
