"""Which cases changed between two recordings of a suite: run manifests or frozen snapshots.

τ² shipped 75+ task fixes under a "scores not comparable" banner. Here comparisons, gates and
``--frozen`` name the cases instead: a case changed when its content hash differs, and a case with
unchanged content is still affected when the domain it runs against (schema, fixtures, policy, tool
code) has a different hash. Works on plain dicts so any layer can use it.
"""

from __future__ import annotations

from typing import Any


def _suite_block(doc: dict[str, Any]) -> dict[str, Any]:
    block = doc.get("suite", doc)
    if not isinstance(block, dict) or not isinstance(block.get("cases"), dict):
        raise ValueError("not a run manifest or suite snapshot: no suite.cases mapping of case id → hash")
    return block


def _domain_of(block: dict[str, Any], case_id: str) -> str | None:
    meta = block.get("case_meta", {}).get(case_id, {})
    if meta.get("domain"):
        return str(meta["domain"])
    domains = block.get("domains", {})
    return next(iter(domains)) if len(domains) == 1 else None


def changed_cases(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """What differs from ``a`` (before) to ``b`` (after), case by case.

    Returns ``same_suite``, ``changed`` (content hash differs), ``added`` (only in b), ``removed`` (only in
    a), ``domains_changed`` (in both, different hash), ``domains_added``/``domains_removed``,
    ``fixtures_changed`` (per domain, when both sides recorded fixture hashes),
    ``affected_by_domain`` (unchanged content, changed domain: id → domain), ``unchanged`` (comparable)
    and ``reasons`` (id → why it is not comparable). Case lists follow b's order, then a's.
    """
    sa, sb = _suite_block(a), _suite_block(b)
    ca, cb = sa["cases"], sb["cases"]
    da, db = sa.get("domains", {}), sb.get("domains", {})
    domains_changed = sorted(n for n in set(da) & set(db) if da[n] != db[n])
    fa, fb = sa.get("fixtures", {}), sb.get("fixtures", {})
    fixtures_changed = {
        d: sorted(f for f in set(fa.get(d, {})) | set(fb.get(d, {})) if fa.get(d, {}).get(f) != fb.get(d, {}).get(f))
        for d in domains_changed if d in fa and d in fb
    }
    out: dict[str, Any] = {
        "same_suite": sa.get("hash") == sb.get("hash") and bool(sa.get("hash")),
        "changed": [], "added": [], "removed": [], "unchanged": [], "affected_by_domain": {},
        "domains_changed": domains_changed, "fixtures_changed": {d: f for d, f in fixtures_changed.items() if f},
        "domains_added": sorted(set(db) - set(da)), "domains_removed": sorted(set(da) - set(db)),
        "reasons": {},
    }
    for cid in [*cb, *(c for c in ca if c not in cb)]:
        if cid not in ca:
            out["added"].append(cid)
            out["reasons"][cid] = "only in the second"
        elif cid not in cb:
            out["removed"].append(cid)
            out["reasons"][cid] = "only in the first"
        elif ca[cid] != cb[cid]:
            out["changed"].append(cid)
            out["reasons"][cid] = "case content changed"
        else:
            domain = _domain_of(sb, cid) or _domain_of(sa, cid)
            # a case whose domain is not recorded may be affected by any domain change
            hit: list[str] = domains_changed if domain is None else [domain] if domain in domains_changed else []
            if hit:
                out["affected_by_domain"][cid] = ", ".join(hit)
                out["reasons"][cid] = f"domain {', '.join(hit)} changed"
            else:
                out["unchanged"].append(cid)
    return out


def describe_changes(result: dict[str, Any], limit: int = 20) -> str:
    """One readable paragraph naming the cases and domains that differ ('' when nothing does)."""
    parts = []
    for key, label in (("changed", "changed"), ("added", "added"), ("removed", "removed")):
        ids = result[key]
        if ids:
            more = f" (+{len(ids) - limit} more)" if len(ids) > limit else ""
            parts.append(f"{len(ids)} case(s) {label}: {', '.join(ids[:limit])}{more}")
    for domain in result.get("domains_added", []):
        parts.append(f"domain {domain!r} added")
    for domain in result.get("domains_removed", []):
        parts.append(f"domain {domain!r} removed")
    for domain in result["domains_changed"]:
        fixtures = result["fixtures_changed"].get(domain)
        detail = f" (fixtures: {', '.join(fixtures)})" if fixtures else ""
        affected = [c for c, d in result["affected_by_domain"].items() if domain in d.split(", ")]
        parts.append(f"domain {domain!r} changed{detail}, affecting {len(affected)} unchanged case(s)")
    return "; ".join(parts)
