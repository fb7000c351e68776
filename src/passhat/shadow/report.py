"""The shadow report: every conversation's trials compared with production, and the shares with Wilson intervals.

A conversation *diverges* when any compared trial shows any divergence kind — production's own duplicate
writes included, since a duplicate in production is the failure shadow exists to find even when the
candidate repeats it. Trials that ended in infrastructure errors are not compared (neither the same nor
different); a conversation with none compared is *unmeasured* and left out of the shares' denominators.
Shares are over conversations, one binomial per kind, never over trials pooled across conversations.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from passhat.domain import Domain
from passhat.models.shadow import (
    DIVERGENCE_KINDS,
    ConversationResult,
    Duplicate,
    ReplyCheck,
    Share,
    TrialDivergence,
    WriteCall,
    WriteDifference,
)
from passhat.runner.health import headline
from passhat.runner.records import TrialRecord
from passhat.shadow.cases import Call, normalized_arguments, production_writes
from passhat.shadow.divergence import compare_writes, duplicates, reply_numbers, substitute
from passhat.shadow.replay import ReadCounts
from passhat.shadow.traces import Recorded
from passhat.stats.intervals import wilson


def _write(call: Call) -> WriteCall:
    return WriteCall(tool=call.tool, arguments=call.arguments, at=call.turn)


def _duplicates(calls: Sequence[Call]) -> list[Duplicate]:
    return [Duplicate(tool=c.tool, arguments=c.arguments, times=n) for c, n in duplicates(calls)]


def candidate_writes(record: TrialRecord, domain: Domain) -> list[Call]:
    """The trial's writes that took effect (``committed``, even when a fault hid the answer), in order."""
    out = []
    for c in record.calls:
        tool = domain.tools.get(c.tool)
        if tool is not None and tool.kind == "write" and c.committed:
            out.append(Call(c.tool, normalized_arguments(tool, c.arguments), c.result, c.error, c.step))
    return out


def compare_trial(record: TrialRecord, production: list[Call], production_reply: str | None, domain: Domain,
                  reads: ReadCounts, production_repeats: bool, replies: bool = True) -> TrialDivergence:
    """One trial against production (an infrastructure error is recorded, not compared). ``replies=False``:
    the reply is compared and recorded, but a difference is not a divergence."""
    base: dict[str, Any] = {"trial": record.trial, "outcome": record.outcome, "end_reason": record.end_reason,
                            "reads_served": reads.served, "reads_unrecorded": reads.unrecorded}
    if record.outcome == "error":
        return TrialDivergence(**base, problem=headline(record.error))
    writes = candidate_writes(record, domain)
    pairs = compare_writes(production, writes)
    reply = None
    if production_reply is not None:
        theirs, mine = reply_numbers(production_reply), reply_numbers(substitute(record.reply, pairs.aliases))
        reply = ReplyCheck(production=theirs, candidate=mine, missing=[n for n in theirs if n not in mine],
                           extra=[n for n in mine if n not in theirs])
    repeated = _duplicates(writes)
    present = {"extra": bool(pairs.extra), "missing": bool(pairs.missing), "different": bool(pairs.different),
               "duplicate": bool(repeated), "production_duplicate": production_repeats,
               "reply": replies and reply is not None and bool(reply.missing or reply.extra)}
    return TrialDivergence(
        **base, problem=headline(record.error) if record.error else None,
        unknown_tools=[c.tool for c in record.calls if c.status == "unknown_tool"],
        writes=[_write(c) for c in writes], same=len(pairs.same), extra=[_write(c) for c in pairs.extra],
        missing=[_write(p) for p in pairs.missing], duplicates=repeated, reply=reply,
        different=[WriteDifference(tool=p.tool, fields=fields, production=p.arguments, candidate=args)
                   for p, _, args, fields in pairs.different],
        kinds=[k for k in DIVERGENCE_KINDS if present[k]],
    )


def conversation_result(rec: Recorded, case_id: str, domain: Domain, records: Sequence[TrialRecord],
                        counts: dict[tuple[str, int], ReadCounts], replies: bool = True) -> ConversationResult:
    """Every trial of one conversation, compared; and the conversation's status."""
    production = production_writes(rec, domain)
    repeats = _duplicates(production)
    reply = rec.conversation.reply
    trials = [compare_trial(r, production, reply, domain, counts.get((case_id, r.trial), ReadCounts()), bool(repeats),
                            replies) for r in sorted(records, key=lambda r: r.trial)]
    measured = [t for t in trials if t.outcome != "error"]
    kinds = {k for t in measured for k in t.kinds}
    diverging = sum(1 for t in measured if t.kinds)
    return ConversationResult(
        id=rec.conversation.id, case_id=case_id, source=rec.where, production_writes=[_write(c) for c in production],
        production_duplicates=repeats, production_reply=reply, trials=trials, measured=len(measured),
        diverging=diverging, kinds=[k for k in DIVERGENCE_KINDS if k in kinds],
        status="unmeasured" if not measured else "diverges" if diverging else "same",
    )


def _count(kind: str, c: ConversationResult) -> int:
    measured = [t for t in c.trials if t.outcome != "error"]
    if kind == "production_duplicate":
        return sum(d.times - 1 for d in c.production_duplicates)
    if kind == "duplicate":
        return sum(d.times - 1 for t in measured for d in t.duplicates)
    if kind in ("extra", "missing", "different"):
        return sum(len(getattr(t, kind)) for t in measured)
    if kind == "reply":
        return sum(1 for t in measured if "reply" in t.kinds)
    return c.diverging


def shares(conversations: Sequence[ConversationResult], confidence: float) -> list[Share]:
    """``any`` and each kind: measured conversations with it, Wilson interval, and occurrences."""
    measured = [c for c in conversations if c.status != "unmeasured"]
    out = []
    for kind in ("any", *DIVERGENCE_KINDS):
        having = [c for c in measured if (c.status == "diverges" if kind == "any" else kind in c.kinds)]
        low, high = wilson(len(having), len(measured), confidence)
        out.append(Share(kind=kind, conversations=len(having), of=len(measured),
                         share=len(having) / len(measured) if measured else None, ci_low=low, ci_high=high,
                         count=sum(_count(kind, c) for c in measured)))
    return out
