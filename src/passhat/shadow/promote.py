"""``passhat shadow promote``: one conversation of a shadow run as a regression case.

The case replays the conversation as its shadow case did — the recorded user turns, identity, fixture and
production's transient write failures as faults — and expects the final state one side's writes produce:
``reference:`` holds production's writes that took effect (``--expect production``, the default) or the
candidate's in one trial (``--expect candidate``), and ``expect_state: reference`` compares the trial's row
changes with theirs. A conversation without writes expects that nothing changes.

What cannot be the same in a replay is not compared (``ignore``): columns whose values depend on the
world's seed or clock (generated ids, timestamps — found by running the reference twice, with different
seeds and clocks), and text columns whose written text quotes an id of a kind the world generates (an
email body naming refund ``R-45925``: a replay refunds under another id). Unlike the shadow case, the
regression case runs against the fixture only: production's recorded reads are not served.
"""

from __future__ import annotations

import asyncio
import difflib
import re
from pathlib import Path
from typing import Any, Literal

from passhat.cases.load import check_references, load_case, parse_case
from passhat.domain import Domain
from passhat.errors import PasshatError
from passhat.models.files import write_text_atomic
from passhat.models.shadow import ConversationResult, ShadowReport, WriteCall
from passhat.redaction import Redactor
from passhat.seeding import derive_seed
from passhat.shadow.run import SHADOW_JSON, domain_ref_from, resolve_domain
from passhat.tools import ToolBoundary, ToolContext
from passhat.validation import dump_yaml
from passhat.world import Diff

Side = Literal["production", "candidate"]
GENERATED = re.compile(r"^(\D*?)(\d{3,})$")
HEADER = "# Promoted from a shadow run by `passhat shadow promote`; edit freely.\n"


def load_report(shadow_dir: Path) -> ShadowReport:
    try:
        return ShadowReport.load(shadow_dir / SHADOW_JSON)
    except FileNotFoundError:
        raise PasshatError(f"{shadow_dir}: not a shadow folder (no {SHADOW_JSON}; `passhat shadow` writes one)") from None


def find_conversation(report: ShadowReport, wanted: str, shadow_dir: Path) -> ConversationResult:
    """The conversation by its id (or its case id); an unknown one names the nearest ids, or what there is."""
    for c in report.conversations:
        if wanted in (c.id, c.case_id):
            return c
    ids = [c.id for c in report.conversations]
    near = difflib.get_close_matches(wanted, ids, n=5, cutoff=0.6)
    if near:
        raise PasshatError(f"{shadow_dir}: no conversation {wanted!r}; nearest: {', '.join(near)} (of {len(ids)}; "
                        f"every id is in {SHADOW_JSON})")
    more = f" and {len(ids) - 20} more (every id is in {SHADOW_JSON})" if len(ids) > 20 else ""
    raise PasshatError(f"{shadow_dir}: no conversation {wanted!r}; it has: {', '.join(ids[:20])}{more}")


def expected_writes(c: ConversationResult, side: Side, trial: int | None) -> tuple[list[WriteCall], str]:
    """The chosen side's writes and how the case describes them."""
    if side == "production":
        if trial is not None:
            raise PasshatError("--trial picks a candidate trial; give it with --expect candidate")
        return c.production_writes, "production's writes"
    measured = [t for t in c.trials if t.outcome != "error"]
    chosen = measured[0] if trial is None and measured else next((t for t in measured if t.trial == trial), None)
    if chosen is None:
        have = ", ".join(str(t.trial) for t in measured) or "none (infrastructure errors only)"
        raise PasshatError(f"conversation {c.id!r}: no compared candidate trial {'' if trial is None else trial}; "
                        f"compared trials: {have}")
    return chosen.writes, f"the candidate's writes in trial {chosen.trial}"


async def _changes(domain: Domain, fixture: str, identity: str | None, calls: list[dict[str, Any]], seed: int,
                   ticks: int) -> Diff:
    world = domain.restore(fixture, seed)
    try:
        boundary = ToolBoundary(domain.tool_list(), ToolContext(world, identity=identity))
        for call in calls:
            for _ in range(ticks):
                world.clock.tick()
            record = await boundary.call(call["tool"], call["args"])
            if not record.ok:
                raise PasshatError(f"the write {call['tool']} {call['args']} cannot run on fixture {fixture!r}: "
                                f"{record.error} (the fixture differs from production's state)")
        return world.diff()
    finally:
        world.close()


def unstable_columns(domain: Domain, fixture: str, identity: str | None, calls: list[dict[str, Any]]) -> dict[str, list[str]]:
    """Columns a replay cannot reproduce: seed- or clock-dependent values, and text quoting a generated id."""
    a = asyncio.run(_changes(domain, fixture, identity, calls, derive_seed("promote", 1), 0))
    b = asyncio.run(_changes(domain, fixture, identity, calls, derive_seed("promote", 2), 3))
    unstable: dict[str, set[str]] = {}
    shapes: set[str] = set()
    for table in sorted(set(a.tables) | set(b.tables)):
        # rows with the same key pair up; the rest (inserts under generated keys) in order
        keyed_b = {r.key: r for r in b.rows(table)}
        pairs, unkeyed = [], []
        for r in a.rows(table):
            if r.key in keyed_b:
                pairs.append((r, keyed_b.pop(r.key)))
            else:
                unkeyed.append(r)
        pairs += zip(unkeyed, keyed_b.values(), strict=False)
        for ra, rb in pairs:
            after_a, after_b = ra.after or {}, rb.after or {}
            for col in after_a.keys() | after_b.keys():
                va, vb = after_a.get(col), after_b.get(col)
                if va != vb:
                    unstable.setdefault(table, set()).add(col)
                    m = GENERATED.match(str(va)) if isinstance(va, str) else None
                    if m:
                        shapes.add(re.escape(m.group(1)) + r"\d{" + str(len(m.group(2))) + "}")
    if shapes:
        quoting = re.compile(r"(?<![A-Za-z0-9])(?:" + "|".join(sorted(shapes)) + r")(?![0-9])")
        for change in a.rows():
            for col, value in (change.after or {}).items():
                if isinstance(value, str) and " " in value and quoting.search(value):
                    unstable.setdefault(change.table, set()).add(col)
    return {t: sorted(cols) for t, cols in sorted(unstable.items())}


def promoted_case(shadow_dir: Path, conversation: str, to: Path, *, expect: Side = "production",
                  trial: int | None = None) -> dict[str, Any]:
    """Build (and check: it loads, its reference runs) the regression case for one conversation."""
    report = load_report(shadow_dir)
    c = find_conversation(report, conversation, shadow_dir)
    shadow_case = load_case(shadow_dir / "cases" / f"{c.case_id}.yaml")
    domain, ref = resolve_domain(report.domain_ref)
    writes, which = expected_writes(c, expect, trial)
    data: dict[str, Any] = shadow_case.model_dump(mode="json", exclude_defaults=True)
    data.pop("assertions", None)
    calls = [{"tool": w.tool, "args": w.arguments} for w in writes]
    if calls:
        ignore = unstable_columns(domain, shadow_case.fixture, shadow_case.user.identity, calls)
        data["reference"] = calls
        data["assertions"] = [{"expect_state": {"reference": True, **({"ignore": ignore} if ignore else {}),
                                                "description": f"the final state {which} produce"}}]
    else:
        data["assertions"] = [{"unchanged_except": {"description": f"nothing changes: {which} changed nothing"}}]
    repeats = c.production_duplicates if expect == "production" else []
    note = (f" Production made {len(repeats)} write(s) more than once; the case expects that too." if repeats else "")
    data.update(
        domain=domain_ref_from(ref, to), split="regression", tags={**shadow_case.tags, "source": "shadow"},
        description=(f"Promoted from shadow run {shadow_dir.name} (candidate {report.agent}): production conversation {c.id} "
                     f"({c.source}). Expects the final state of {which}.{note}"),
    )
    if report.redaction.get("enabled", True):
        data = Redactor().value(data)  # read redacted already; the default rules again, in case
    file = to / f"{c.case_id}.yaml"
    check_references(parse_case(data, str(file)), str(file), domain)
    return data


def promote(shadow_dir: str | Path, conversation: str, to: str | Path, *, expect: Side = "production",
            trial: int | None = None) -> Path:
    """Write ``TO/CASE_ID.yaml`` for one conversation of a shadow run; returns its path. Refuses to overwrite."""
    shadow_dir, to = Path(shadow_dir), Path(to)
    data = promoted_case(shadow_dir, conversation, to, expect=expect, trial=trial)
    file = to / f"{data['id']}.yaml"
    if file.exists():
        raise PasshatError(f"{file}: already exists; remove it or promote into another folder")
    to.mkdir(parents=True, exist_ok=True)
    write_text_atomic(file, HEADER + dump_yaml(data, sort_keys=False, allow_unicode=True, width=110))
    return file
