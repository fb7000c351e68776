"""Which cases changed between two recordings of a suite: run manifests or frozen snapshots.

τ² shipped 75+ task fixes under a "scores not comparable" banner. Here comparisons, gates and
``--frozen`` name the cases instead: a case changed when its content hash differs, and a case with
unchanged content is still affected when the domain it runs against (schema, fixtures, policy, tool
code) has a different hash. Both sides are a manifest's ``suite`` block (:class:`SuiteInfo`): a snapshot
holds one of the same shape, and ``suites.snapshot.suite_block`` builds one for a suite on disk.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from passhat.models import SuiteInfo


@dataclass(frozen=True)
class SuiteChanges:
    """What differs from one recording of a suite (before) to another (after), case by case. Case lists
    follow the second's order, then the first's."""

    same_suite: bool
    """Both have the same suite hash."""
    changed: list[str] = field(default_factory=list)
    """Cases whose content hash differs."""
    added: list[str] = field(default_factory=list)
    """Cases only in the second."""
    removed: list[str] = field(default_factory=list)
    """Cases only in the first."""
    unchanged: list[str] = field(default_factory=list)
    """Cases with the same content and domain: comparable."""
    affected_by_domain: dict[str, str] = field(default_factory=dict)
    """Cases with unchanged content whose domain changed → the domain(s)."""
    domains_changed: list[str] = field(default_factory=list)
    """Domains in both, with another hash."""
    fixtures_changed: dict[str, list[str]] = field(default_factory=dict)
    """Per changed domain, the fixtures whose built state differs (when both sides recorded them)."""
    domains_added: list[str] = field(default_factory=list)
    """Domains only in the second."""
    domains_removed: list[str] = field(default_factory=list)
    """Domains only in the first."""
    reasons: dict[str, str] = field(default_factory=dict)
    """Case id → why it is not comparable."""


def _domain_of(block: SuiteInfo, case_id: str) -> str | None:
    meta = block.case_meta.get(case_id)
    if meta is not None and meta.domain:
        return meta.domain
    return next(iter(block.domains)) if len(block.domains) == 1 else None


def changed_cases(sa: SuiteInfo, sb: SuiteInfo) -> SuiteChanges:
    """What differs from ``sa`` (before) to ``sb`` (after), case by case (see :class:`SuiteChanges`)."""
    ca, cb = sa.cases, sb.cases
    da, db = sa.domains, sb.domains
    domains_changed = sorted(n for n in set(da) & set(db) if da[n] != db[n])
    fa, fb = sa.fixtures, sb.fixtures
    fixtures_changed = {
        d: sorted(f for f in set(fa.get(d, {})) | set(fb.get(d, {})) if fa.get(d, {}).get(f) != fb.get(d, {}).get(f))
        for d in domains_changed if d in fa and d in fb
    }
    out = SuiteChanges(same_suite=sa.hash == sb.hash and bool(sa.hash), domains_changed=domains_changed,
                       fixtures_changed={d: f for d, f in fixtures_changed.items() if f},
                       domains_added=sorted(set(db) - set(da)), domains_removed=sorted(set(da) - set(db)))
    for cid in [*cb, *(c for c in ca if c not in cb)]:
        if cid not in ca:
            out.added.append(cid)
            out.reasons[cid] = "only in the second"
        elif cid not in cb:
            out.removed.append(cid)
            out.reasons[cid] = "only in the first"
        elif ca[cid] != cb[cid]:
            out.changed.append(cid)
            out.reasons[cid] = "case content changed"
        else:
            domain = _domain_of(sb, cid) or _domain_of(sa, cid)
            # a case whose domain is not recorded may be affected by any domain change
            hit: list[str] = domains_changed if domain is None else [domain] if domain in domains_changed else []
            if hit:
                out.affected_by_domain[cid] = ", ".join(hit)
                out.reasons[cid] = f"domain {', '.join(hit)} changed"
            else:
                out.unchanged.append(cid)
    return out


def describe_changes(result: SuiteChanges, limit: int = 20) -> str:
    """One readable paragraph naming the cases and domains that differ ('' when nothing does)."""
    parts = []
    for ids, label in ((result.changed, "changed"), (result.added, "added"), (result.removed, "removed")):
        if ids:
            more = f" (+{len(ids) - limit} more)" if len(ids) > limit else ""
            parts.append(f"{len(ids)} case(s) {label}: {', '.join(ids[:limit])}{more}")
    for domain in result.domains_added:
        parts.append(f"domain {domain!r} added")
    for domain in result.domains_removed:
        parts.append(f"domain {domain!r} removed")
    for domain in result.domains_changed:
        fixtures = result.fixtures_changed.get(domain)
        detail = f" (fixtures: {', '.join(fixtures)})" if fixtures else ""
        affected = [c for c, d in result.affected_by_domain.items() if domain in d.split(", ")]
        parts.append(f"domain {domain!r} changed{detail}, affecting {len(affected)} unchanged case(s)")
    return "; ".join(parts)
