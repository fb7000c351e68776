"""The comparison page (``passhat compare --html FILE``): new failures first, then the paired evidence.

Input is the JSON-ready dict ``passhat compare`` builds. That dict lists only the cases whose verdict
changed, so the paired per-case table (every compared case, base beside candidate) is read from the two
run folders it names; when a folder is gone the page still shows the changes and the statistics.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from passhat.errors import PasshatError
from passhat.report import figures
from passhat.results.tally import CaseTally, tally
from passhat.runner.store import RunStore


def _tallies(folder: str | None) -> tuple[dict[str, CaseTally], list[str]] | None:
    if not folder or not Path(folder).is_dir():
        return None
    store = RunStore(Path(folder))
    try:
        cases = list(store.read_manifest()["suite"]["cases"])
    except (PasshatError, KeyError, TypeError):
        return None
    return tally(store.iter_records(), cases), cases


def _rate(t: CaseTally | None) -> float | None:
    return t.passes / t.n if t is not None and t.n else None


def paired_rows(result: dict[str, Any]) -> list[dict[str, Any]]:
    """Every compared case with both runs' c/n and pass^1, ordered new failures, worse, better, unchanged."""
    base, cand = _tallies(result["base"].get("folder")), _tallies(result["candidate"].get("folder"))
    if base is None or cand is None:
        return []
    excluded = {e["id"] for e in result["cases"].get("excluded", [])}
    new_failures, new_passes = set(result.get("new_failures", [])), set(result.get("new_passes", []))
    rows = []
    for cid in cand[1]:
        if cid in excluded or cid not in base[0]:
            continue
        b, c = base[0][cid], cand[0][cid]
        rb, rc = _rate(b), _rate(c)
        delta = None if rb is None or rc is None else rc - rb
        label = ("new failure" if cid in new_failures else "new pass" if cid in new_passes
                 else "worse" if delta is not None and delta < 0 else "better" if delta and delta > 0 else "same")
        top = max(set(c.failure_reasons), key=c.failure_reasons.count) if c.failure_reasons else None
        rows.append({"id": cid, "base": f"{b.passes}/{b.n}", "candidate": f"{c.passes}/{c.n}", "base_rate": rb,
                     "cand_rate": rc, "delta": delta, "label": label, "reason": top,
                     "category": max(c.categories, key=lambda k: c.categories[k]) if c.categories else None})
    order = {"new failure": 0, "worse": 1, "better": 2, "new pass": 3, "same": 4}
    return sorted(rows, key=lambda r: (order[r["label"]], r["delta"] if r["delta"] is not None else 0.0, r["id"]))


def _delta(entry: dict[str, Any] | None) -> dict[str, Any] | None:
    if not entry:
        return None
    return {"estimate": entry["delta"], "ci_low": entry["ci_low"], "ci_high": entry["ci_high"], "method": entry.get("method")}


def _label(name: str) -> str:
    family, k = name.rsplit("_", 1)
    return f"pass{'^' if family == 'pass_hat' else '@'}{k}"


def render(result: dict[str, Any]) -> str:
    """The comparison page as one self-contained HTML string."""
    from passhat.report.html import environment

    metrics = {_label(n): m for n, m in result.get("metrics", {}).items() if n != "pass_at_1"}
    hat = [(name, _delta(m), None) for name, m in metrics.items() if name.startswith("pass^")]
    at = [(name, _delta(m), None) for name, m in metrics.items() if name.startswith("pass@")]
    strata = []
    for key, values in result.get("strata", {}).items():
        names = sorted({n for block in values.values() for n in block if n != "cases"}, key=lambda n: int(n.rsplit("_", 1)[1]))
        rows = [(f"{value} ({block['cases']})", _delta(block.get(names[0])) if names else None,
                 _delta(block.get(names[-1])) if len(names) > 1 else None) for value, block in values.items()]
        table = [{"value": value, "name": _label(n), "p_holm": None, **block[n]}
                 for value, block in values.items() for n in names if n in block]
        labels = (f"Δ {_label(names[0])}", f"Δ {_label(names[-1])}") if names else ("Δ", "Δ")
        strata.append({"key": key, "svg": figures.interval_svg(rows, lo=-1, hi=1, labels=labels), "rows": table})
    return environment().get_template("compare.html.j2").render(
        r=result, metrics=metrics, strata=strata, paired=paired_rows(result),
        hat_svg=figures.interval_svg(hat, lo=-1, hi=1, labels=("Δ", "Δ")) if hat else "",
        at_svg=figures.interval_svg(at, lo=-1, hi=1, labels=("Δ", "Δ")) if at else "",
    )
