"""Looking for a text in the agent's messages, after optional normalisation (``reply_contains``).

Every step is linear in the length of the text: NFKC, lower-casing, one whitespace pattern and one
number pattern whose repeated group starts with a literal comma (no nested ambiguity to backtrack
into). Numbers are compared by value by rewriting each one, in the messages and in the needle alike,
as a canonical numeral between two private-use marks: ``1,234.50`` becomes ``⟨1234.5⟩``, so it matches
``1234.5`` but ``⟨1234.5⟩`` is not a substring of ``⟨11234.56⟩``.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Collection

OPEN, CLOSE = "\ue000", "\ue001"
"""Marks around a canonical number (Unicode private use: never produced by normalisation)."""
_MARKS = {ord(OPEN): None, ord(CLOSE): None}
NUMBER = re.compile(r"[0-9]{1,3}(?:,[0-9]{3}(?![0-9]))+(?:\.[0-9]+)?|[0-9]+(?:\.[0-9]+)?")
"""A number with thousands separators (``1,234,567.5``) or without (``1234567.5``); ASCII digits only
(``unicode`` turns other digits into them first). A group of other than three digits after a comma
ends the number there (``1,2345`` is 1 and 2345)."""
WHITESPACE = re.compile(r"\s+")


def _canonical(match: re.Match[str]) -> str:
    whole, _, fraction = match.group().replace(",", "").partition(".")
    whole, fraction = whole.lstrip("0") or "0", fraction.rstrip("0")
    return f"{OPEN}{whole}.{fraction}{CLOSE}" if fraction else f"{OPEN}{whole}{CLOSE}"


def normalise(text: str, steps: Collection[str], *, case_sensitive: bool) -> str:
    """``text`` after the chosen steps (``unicode``, ``whitespace``, ``numbers``) and, unless
    ``case_sensitive``, lower-casing."""
    if "unicode" in steps:
        text = unicodedata.normalize("NFKC", text)
    if not case_sensitive:
        text = text.lower()
    if "whitespace" in steps:
        text = WHITESPACE.sub(" ", text)
    if "numbers" in steps:
        text = NUMBER.sub(_canonical, text.translate(_MARKS))
    return text


def contains(texts: list[str], needle: str, steps: Collection[str] = (), *, case_sensitive: bool = False) -> bool:
    """Whether ``needle`` occurs in the messages ``texts``.

    Without normalisation the messages are searched joined by line breaks, as always; with it, each on
    its own, so a collapsed line break cannot join the end of one message to the start of the next.
    """
    if not steps:
        hay = "\n".join(texts)
        return needle in hay if case_sensitive else needle.lower() in hay.lower()
    wanted = normalise(needle, steps, case_sensitive=case_sensitive)
    return any(wanted in normalise(t, steps, case_sensitive=case_sensitive) for t in texts)
