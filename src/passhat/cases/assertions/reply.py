"""What the agent told the user (checked only where the user must be told something).

Each looks at the agent's messages to the user: any of them (``scope: any``) or the final reply only
(``scope: last``).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import Field, field_validator

from passhat.cases.assertions.base import BuiltinAssertion, GradedSubject, Scalar, where_sql
from passhat.cases.assertions.fixture import Fixture
from passhat.cases.assertions.textmatch import contains

if TYPE_CHECKING:
    from passhat.graders.base import TrialView

Scope = Literal["any", "last"]


def _texts(view: TrialView, scope: Scope) -> list[str]:
    texts = view.agent_texts
    return texts[-1:] if scope == "last" else texts


class ReplyContains(BuiltinAssertion):
    """The agent's messages to the user contain ``text`` (case-insensitive unless ``case_sensitive``)."""

    subject: ClassVar[GradedSubject] = "reply"
    shorthand: ClassVar[str | None] = "text"

    kind: Literal["reply_contains"] = "reply_contains"
    text: str
    """Text to look for."""
    case_sensitive: bool = False
    """Match case exactly."""
    scope: Scope = "any"
    """``any``: any agent message; ``last``: the final reply only."""
    normalize: list[Literal["numbers", "whitespace", "unicode"]] = Field(default_factory=list)
    """Normalise both the messages and ``text`` before looking: ``numbers`` compares numbers by value,
    thousands separators ignored (``1,234.50`` matches ``1234.5``), and never inside a longer number
    (``1234.5`` is not found in ``11234.56``); ``whitespace`` collapses runs of spaces and line breaks into one space;
    ``unicode`` applies NFKC, so full-width ``１２３`` and ``ＡＢＣ`` match ``123`` and ``ABC``. One name or a
    list, e.g. ``normalize: [numbers, whitespace]``. With any of them each message is searched on its own.
    Default: none (plain substring)."""

    @field_validator("normalize", mode="before")
    @classmethod
    def _one_name(cls, value: Any) -> Any:
        return [value] if isinstance(value, str) else value

    def label_target(self) -> str:
        return self.text

    def _found(self, texts: list[str]) -> tuple[bool, str]:
        """Whether ``text`` is in the messages, and the words saying so."""
        found = contains(texts, self.text, self.normalize, case_sensitive=self.case_sensitive)
        what = f"reply {'contains' if found else 'does not contain'} {self.text!r}"
        if self.normalize:
            what += f" (normalised: {', '.join(self.normalize)})"
        return found, what

    def check(self, view: TrialView) -> tuple[bool, str]:
        texts = _texts(view, self.scope)
        if not texts:
            return False, "the agent said nothing to the user"
        found, what = self._found(texts)
        return found, f"{what}; last reply: {texts[-1][:200]!r}"


class ReplyNotContains(ReplyContains):
    """The agent's messages to the user do not contain ``text``."""

    kind: Literal["reply_not_contains"] = "reply_not_contains"  # type: ignore[assignment]

    def check(self, view: TrialView) -> tuple[bool, str]:
        texts = _texts(view, self.scope)
        if not texts:
            return True, "the agent said nothing to the user"
        found, what = self._found(texts)
        return not found, what


class ReplyMatches(BuiltinAssertion):
    """The agent's messages match the regular expression ``pattern``."""

    subject: ClassVar[GradedSubject] = "reply"
    shorthand: ClassVar[str | None] = "pattern"

    kind: Literal["reply_matches"] = "reply_matches"
    pattern: str
    """Python regular expression searched in each message."""
    scope: Scope = "any"
    """``any``: any agent message; ``last``: the final reply only."""

    def label_target(self) -> str:
        return self.pattern

    def check(self, view: TrialView) -> tuple[bool, str]:
        hit = any(re.search(self.pattern, t) for t in _texts(view, self.scope))
        return hit, f"reply {'matches' if hit else 'does not match'} /{self.pattern}/"

    def check_fixture(self, field: str, fixture: Fixture) -> None:
        super().check_fixture(field, fixture)
        fixture.regex(self.pattern, f"{field}.pattern")


class ReplyMentions(BuiltinAssertion):
    """The reply mentions the value of ``column`` of the row(s) matching ``where`` (e.g. a ticket id)."""

    subject: ClassVar[GradedSubject] = "reply"

    kind: Literal["reply_mentions"] = "reply_mentions"
    table: str
    """Table to check."""
    column: str
    """Column used by the check (summed for ``net_change``, looked for in the reply for ``reply_mentions``)."""
    where: dict[str, Scalar] = Field(default_factory=dict)
    """Column equality filters, AND-ed; numbers match by value (25 == 25.0)."""
    scope: Scope = "any"
    """``any``: any agent message; ``last``: the final reply only."""

    def check(self, view: TrialView) -> tuple[bool, str]:
        where, params = where_sql(self.where)
        values = [r[0] for r in view.query(f'SELECT "{self.column}" FROM "{self.table}"{where}', params)]
        if not values:
            return False, f"no {self.table} row to mention ({self.column} where {self.where})"
        hay = "\n".join(_texts(view, self.scope))
        missing = [v for v in values if str(v) not in hay]
        return not missing, (f"reply does not mention {self.table}.{self.column} {missing[0]!r}" if missing
                             else f"reply mentions {', '.join(map(str, values))}")


KINDS: tuple[type[BuiltinAssertion], ...] = (ReplyContains, ReplyNotContains, ReplyMatches, ReplyMentions)
"""This family's kinds, in the order the reference documents them."""
