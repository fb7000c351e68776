"""Reply grader: what the agent told the user (checked only where the user must be told something)."""

from __future__ import annotations

import re

from passhat.cases import assertions as A
from passhat.graders.base import Grade, TrialView
from passhat.graders.checks import Check, grade_assertions, where_sql
from passhat.graders.textmatch import contains


def _texts(view: TrialView, scope: str) -> list[str]:
    texts = view.agent_texts
    return texts[-1:] if scope == "last" else texts


def _contains(view: TrialView, a: A.ReplyContains) -> tuple[bool, str]:
    texts = _texts(view, a.scope)
    if not texts:
        return a.kind == "reply_not_contains", "the agent said nothing to the user"
    found = contains(texts, a.text, a.normalize, case_sensitive=a.case_sensitive)
    what = f"reply {'contains' if found else 'does not contain'} {a.text!r}"
    if a.normalize:
        what += f" (normalised: {', '.join(a.normalize)})"
    if a.kind == "reply_not_contains":
        return not found, what
    return found, f"{what}; last reply: {texts[-1][:200]!r}"


def _matches(view: TrialView, a: A.ReplyMatches) -> tuple[bool, str]:
    texts = _texts(view, a.scope)
    hit = any(re.search(a.pattern, t) for t in texts)
    return hit, f"reply {'matches' if hit else 'does not match'} /{a.pattern}/"


def _mentions(view: TrialView, a: A.ReplyMentions) -> tuple[bool, str]:
    where, params = where_sql(a.where)
    values = [r[0] for r in view.query(f'SELECT "{a.column}" FROM "{a.table}"{where}', params)]
    if not values:
        return False, f"no {a.table} row to mention ({a.column} where {a.where})"
    hay = "\n".join(_texts(view, a.scope))
    missing = [v for v in values if str(v) not in hay]
    return not missing, (f"reply does not mention {a.table}.{a.column} {missing[0]!r}" if missing
                         else f"reply mentions {', '.join(map(str, values))}")


REPLY_CHECKS: dict[str, Check] = {
    "reply_contains": _contains, "reply_not_contains": _contains, "reply_matches": _matches,
    "reply_mentions": _mentions,
}


def grade_reply(view: TrialView) -> list[Grade]:
    """One grade per reply assertion (built-in and custom reply graders alike)."""
    return grade_assertions(view, "reply", REPLY_CHECKS)
