"""Redaction: personal data never reaches the run folder or an exported span unless the user opts out.

Tool results, messages, diffs and grade reasons can all carry what the sandbox's fixture holds —
e-mail addresses, phone numbers, card numbers. The runner passes every record through a
:class:`Redactor` before it is written, so everything downstream (summary, reports, OTLP export,
regression cases) only ever sees redacted values. Defaults cover e-mail, phone and card numbers, in
values and in dict keys; users add field names (any value under that key is replaced) and named
patterns.

**Linear time.** Records hold whatever an agent or a tool produced, so a reply of a megabyte must not
stall the run. Python's ``re`` backtracks, so every default pattern is written such that the work at
one starting position is bounded by a constant: every repetition has an upper bound (``{1,64}``,
never ``+`` or ``*``), and a fixed-width look-behind lets a match start only where a run of candidate
characters begins, so the engine does not rescan the same run from each of its positions. What a
pattern cannot say in that form (Luhn, digit counts, which separators split a number) is decided by a
function on the bounded match. ``bench/bench_redaction.py`` shows 1 MB costing ~10× 100 KB.

**What counts.** A card number is 13–19 digits that pass the Luhn check, written in one piece or in
groups of a common spelling (4-4-4-4, 4-6-5, …) separated by one kind of space, dash or dot; digits
that belong to a decimal number (``113.71000000000004``), a longer digit run or an identifier
(``ORD-4111…``) are not. A phone number is international (``+44 20 7946 0958``, ``+1-555-123-4567``,
``+1 (555) 123-4567``, ``+14155552671``), North American (``(555) 123-4567``, ``555.123.4567``,
``1-555-123-4567``), 3-4-4 grouped (``020 7946 0958``, ``138 0013 8000``) or a Chinese mobile number
(``13800138000``).

**Placeholders.** By default every match becomes ``[REDACTED:KIND]``, so two different e-mail addresses
read the same. A :class:`Redactor` built with ``numbered=True`` gives each distinct value its own
placeholder (``[REDACTED:email:1]``, ``[REDACTED:email:2]``), the same wherever the value appears, numbered
in the order values are first seen (an e-mail address compared without case, a card or phone number by its
digits). ``passhat shadow`` needs that: a candidate that writes to another address than production did
must not look the same. The numbers say nothing about the values; the table of values is never written.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from pydantic_core import to_json

DEFAULT_PATTERNS: dict[str, str] = {
    # the local part starts where its run of characters starts (RFC 5321: at most 64 of them)
    "email": r"(?<![A-Za-z0-9_.%+\-])[A-Za-z0-9_.%+\-]{1,64}@[A-Za-z0-9\-]{1,63}(?:\.[A-Za-z0-9\-]{1,63}){0,8}"
             r"\.[A-Za-z]{2,24}",
    # a run of up to 12 digit groups joined by single spaces, dashes or dots; _card_spans picks the card out
    "card": r"(?<![A-Za-z0-9_.+\-])[0-9]{1,19}(?:[ .\-][0-9]{1,19}){0,11}",
    "phone": (
        r"(?<![A-Za-z0-9_+])\+[0-9]{1,3}(?:[ .\-]?(?:\([0-9]{1,4}\)|[0-9]{1,6})){1,8}"
        r"|(?<![A-Za-z0-9_.+\-])(?:(?:1[ .\-])?(?:\([0-9]{3}\)[ .\-]?|[0-9]{3}[ .\-])[0-9]{3}[ .\-][0-9]{4}"
        r"|[0-9]{3}[ \-][0-9]{4}[ \-][0-9]{4}|1[3-9][0-9]{9})(?![0-9]|[.\-][0-9])"
    ),
}
_GROUP = re.compile(r"[0-9]{1,19}")
_DIGIT = re.compile(r"[0-9]")
_DOUBLED = str.maketrans("0123456789", "0246813579")


def luhn_ok(digits: str) -> bool:
    """The Luhn checksum card numbers carry; keeps long order numbers and IDs from being redacted."""
    doubled = digits[-2::-2].translate(_DOUBLED)  # every second digit from the right, doubled, digits summed
    return (sum(map(int, digits[-1::-2])) + sum(map(int, doubled))) % 10 == 0


def _is_card(groups: list[str], seps: list[str]) -> bool:
    """One piece of 13–19 digits, or a grouped spelling (a 4-digit group, then groups of 3–6, one separator)."""
    if len(groups) > 1 and (len(set(seps)) != 1 or len(groups[0]) != 4 or any(not 3 <= len(g) <= 6 for g in groups[1:])):
        return False
    return luhn_ok("".join(groups))


Mark = Callable[[str, str], str]
"""(kind, matched text) → the placeholder that replaces it."""


PLACEHOLDER_PREFIX = "[REDACTED:"
"""What every placeholder starts with, plain or numbered: a stored text holding it was redacted."""


def plain_mark(kind: str, _text: str) -> str:
    """One placeholder per kind: ``[REDACTED:email]``."""
    return f"[REDACTED:{kind}]"


def _card_spans(m: re.Match[str], mark: Mark = plain_mark) -> str:
    """Redact the card numbers inside one run of digit groups.

    A run may hold a card and its neighbours (``qty 2 4111 1111 1111 1111 2027``): it is cut only at
    spaces, because digits joined by a dot or a dash belong to one number (a decimal, a date, an ID).
    """
    text = m.group(0)
    if len(text) < 13:  # fewer than 13 digits: most numbers end here
        return text
    spans = [(g.start(), g.end()) for g in _GROUP.finditer(text)]
    groups = [text[a:b] for a, b in spans]
    seps = [text[spans[i][1]:spans[i + 1][0]] for i in range(len(spans) - 1)]
    rest = m.string[m.end():m.end() + 2]
    continued = rest[:1].isdigit() or (rest[:1] in (" ", ".", "-") and rest[1:2].isdigit())
    n = len(groups)
    at = [0]  # digits before group i
    for g in groups:
        at.append(at[-1] + len(g))
    if at[-1] < 13:
        return text

    def start_ok(i: int) -> bool:
        return i == 0 or seps[i - 1] == " "

    def end_ok(j: int) -> bool:
        return (j == n and not continued) or (j < n and seps[j - 1] == " ")

    out, last, i = [], 0, 0
    while i < n:
        found = None
        if start_ok(i):
            found = next((j for j in range(min(n, i + 6), i, -1)
                          if 13 <= at[j] - at[i] <= 19 and end_ok(j) and _is_card(groups[i:j], seps[i:j - 1])), None)
        if found is None:
            i += 1
            continue
        out += [text[last:spans[i][0]], mark("card", text[spans[i][0]:spans[found - 1][1]])]
        last, i = spans[found - 1][1], found
    return "".join(out) + text[last:] if out else text


def _phone(m: re.Match[str], mark: Mark = plain_mark) -> str:
    """International numbers need 7–15 digits (E.164) and must not run on into more digits."""
    text = m.group(0)
    if text.startswith("+"):
        digits = len(_DIGIT.findall(text))
        if not 7 <= digits <= 15 or m.string[m.end():m.end() + 1].isdigit():
            return text
    return mark("phone", text)


_CHECKS: dict[str, Callable[[re.Match[str], Mark], str]] = {"card": _card_spans, "phone": _phone}
"""Decisions a bounded regular expression cannot express, applied to each match of a default pattern."""
_NEEDS: dict[str, Callable[[str], bool]] = {
    "email": lambda text: "@" in text,
    "card": lambda text: _DIGIT.search(text) is not None,
    "phone": lambda text: _DIGIT.search(text) is not None,
}
"""What a match cannot do without (an ``@``, a digit): text without it skips the pattern (a cheap pre-filter)."""
_SAME_VALUE: dict[str, Callable[[str], str]] = {
    "email": str.casefold,
    "card": lambda text: "".join(_DIGIT.findall(text)),
    "phone": lambda text: "".join(_DIGIT.findall(text)),
}
"""What makes two matches the same value, for numbered placeholders (``4111 1111…`` is ``4111-1111…``)."""
_ATTENTION = re.compile(r"[0-9@]").search
"""Finds what every default pattern needs (an ``@`` or a digit); text without one is returned as it is.
A record holds hundreds of strings, ~90% of them words, keys and IDs with neither: this one linear scan
is most of what redacting a record costs (docs/design/016-group-commit.md)."""
_DIGEST = re.compile(r"[0-9a-f]{32}|[0-9a-f]{40}|[0-9a-f]{64}").fullmatch
"""A whole value that is a hex digest (MD5/trace id, SHA-1, SHA-256 length): an identifier, never personal
data. Left alone by the default patterns, which would otherwise take a digest that happens to start with
13–19 digits for a card or a phone number (3 in 10,000 SHA-256s), and a file diff's recorded hash would no
longer match its content when the trial is re-graded."""


_NO_MATCH_TEXT = (r"[0-9]{0,10}[A-Za-z_][A-Za-z0-9_\-]*"
                  r"|[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]{1,9})?(?:Z|[+\-][0-9]{2}:[0-9]{2})?")
_NO_MATCH = re.compile(_NO_MATCH_TEXT).fullmatch
"""A whole value no default pattern can match in: an identifier (``R-94480``, ``refund-4812``, a span id
``2ee12b1b0a279f62``: at most 10 digits, then a letter or ``_``, then letters, digits, ``_`` and ``-``) or an ISO
timestamp. Why it cannot: every default match needs an ``@``, a ``+``, or a digit that starts a run (no ASCII
letter, digit, ``_``, ``.`` or ``-`` just before it: the patterns' look-behinds), which here is only the first
one; and from there card and phone numbers need 11 digits in a row or a space, dot or dash between digit groups
(a timestamp's ``2026-10-31`` is 8 digits: not a card, no 3-3-4 or 3-4-4 grouping). A trial's record holds ~15
such values that are new each trial (ids, span ids, times), so the memo cannot spare them the patterns;
``tests/redaction`` checks the shortcut against the patterns."""
_NO_MATCH_JSON = re.compile(_NO_MATCH_TEXT.encode()).fullmatch
"""The same on a string's JSON text (its bytes: ASCII only, so no escape and the same characters as decoded)."""
_ATTENTION_JSON = re.compile(rb"[0-9@]").search
"""``_ATTENTION`` on a string's JSON text: an escape never stands for a digit or an ``@`` (JSON writers escape
only quotes, backslashes and control characters, and ``\\u00XX`` holds digits itself)."""


_SCALARS = frozenset({int, float, bool, type(None)})
"""Types a JSON-like structure holds that redaction leaves as they are."""
MEMO_ENTRIES = 8192
"""Strings a :class:`Redactor` remembers (emptied when full: the next trials refill it with what recurs)."""
MEMO_MAX_CHARS = 512
"""Longer strings are not remembered: they rarely recur (replies, e-mail bodies), and the memo stays small."""


def _always(text: str) -> object:
    """With a user's pattern, no string can be skipped."""
    return text


@dataclass
class Redactor:
    """Replaces matches of named patterns, and whole values under named fields, with ``[REDACTED:name]``
    (``[REDACTED:name:N]`` when ``numbered``)."""

    patterns: dict[str, str] = field(default_factory=lambda: dict(DEFAULT_PATTERNS))
    fields: set[str] = field(default_factory=set)
    """Keys whose values are replaced entirely, wherever they appear (e.g. ``national_id``)."""
    enabled: bool = True
    numbered: bool = False
    """Each distinct value its own placeholder, ``[REDACTED:email:1]`` (see the module docstring); one redactor
    keeps one numbering, so everything that must agree is redacted by the same instance."""

    def __post_init__(self) -> None:
        self._numbers: dict[tuple[str, str], str] = {}
        self._counts: dict[str, int] = {}
        self._lock = threading.Lock()
        mark = self.placeholder if self.numbered else plain_mark
        self._compiled: list[tuple[str, re.Pattern[str], Any]] = []
        for name, p in self.patterns.items():
            default = DEFAULT_PATTERNS.get(name) == p
            repl: Any = f"[REDACTED:{name}]"
            if default and name in _CHECKS:
                repl = partial(_checked, _CHECKS[name], mark) if self.numbered else _CHECKS[name]
            elif self.numbered:
                repl = partial(_marked, name, mark)
            self._compiled.append((name if default else "", re.compile(p), repl))
        self._only_defaults = all(default for default, _, _ in self._compiled)
        self._plain: Callable[[str], object] = _ATTENTION if self._only_defaults else _always
        self._json_memo: dict[bytes, bytes | None] = {}
        """:meth:`json_text`'s strings as they are in JSON text, with their redacted text (``None``: unchanged)."""
        self._json_changing: dict[bytes, bytes] = {}
        """The entries of ``_json_memo`` that redaction changes (a record's strings are matched against it at once)."""
        self._memo: dict[str, str] = {}
        """Strings redacted already, with their result: a run's records repeat the same tool results, reasons
        and IDs trial after trial. Valid in both modes: a numbered value keeps its number once given."""

    @classmethod
    def build(cls, *, extra_fields: Iterable[str] = (), extra_patterns: Mapping[str, str] | None = None,
              enabled: bool = True, numbered: bool = False) -> Redactor:
        """Defaults plus the user's additions."""
        return cls(patterns={**DEFAULT_PATTERNS, **(extra_patterns or {})}, fields=set(extra_fields), enabled=enabled,
                   numbered=numbered)

    def describe(self) -> dict[str, Any]:
        """What the manifest records about redaction (rules, not values)."""
        return {"enabled": self.enabled, "patterns": sorted(self.patterns), "fields": sorted(self.fields),
                **({"numbered": True} if self.numbered else {})}

    def placeholder(self, kind: str, text: str) -> str:
        """The placeholder of one value: ``[REDACTED:KIND]``, or its own numbered one (``numbered``)."""
        if not self.numbered:
            return plain_mark(kind, text)
        key = (kind, _SAME_VALUE.get(kind, str)(text))
        with self._lock:  # records may be encoded off the event loop
            mark = self._numbers.get(key)
            if mark is None:
                self._counts[kind] = n = self._counts.get(kind, 0) + 1
                mark = self._numbers[key] = f"[REDACTED:{kind}:{n}]"
        return mark

    def text(self, value: str) -> str:
        """Redact one string."""
        if self._only_defaults and _ATTENTION(value) is None:
            return value  # no default pattern can match: the common case, decided in one C-speed scan
        memo = self._memo
        done = memo.get(value)
        if done is None:
            if self._only_defaults and _NO_MATCH(value) is not None:
                return value  # an id or a time, new each trial: not remembered, the memo keeps what recurs
            done = self._redact(value)
            if len(value) <= MEMO_MAX_CHARS:
                if len(memo) >= MEMO_ENTRIES:
                    memo.clear()
                memo[value] = done
        return done

    def _redact(self, value: str) -> str:
        digest = _DIGEST(value) is not None
        for default, rx, repl in self._compiled:
            needed = _NEEDS.get(default)
            if needed is not None and (digest or not needed(value)):
                continue
            value = rx.sub(repl, value)
        return value

    @property
    def on_text(self) -> bool:
        """Whether :meth:`json_text` can redact JSON text (it may still decline a text whose keys would change):
        off, or the default patterns alone, no named fields, no numbering. Callers skip writing the text when not."""
        return not self.enabled or not (self.fields or self.numbered or not self._only_defaults)

    def json_text(self, raw: bytes) -> bytes | None:
        """``raw`` (compact JSON as pydantic writes it) with its strings redacted, the same bytes as redacting the
        parsed value with :meth:`value` and writing it again; ``None`` where that cannot be done on the text
        (named fields, patterns of the user's, numbered placeholders, a key that redaction would change: two
        keys may then collide), and the caller redacts the value instead.

        Why: a record holds hundreds of strings and keys, and walking it in Python, copying every dict and
        list, was most of what storing a record cost. On the text, splitting at the quotes separates the
        strings in C; each distinct one is looked at once (``_json_memo``), and only if it has a digit or an
        ``@`` (the defaults need one: ``_ATTENTION``); a record's strings are matched against the memo as sets.
        The few that change are then replaced in the text as a whole (:func:`_replaced`) rather than the text
        joined again from its ~1,400 parts (docs/design/039)."""
        if not self.enabled:
            return raw
        if not self.on_text:
            return None
        escaped = b"\\" in raw
        if escaped:  # same-length stand-ins for the two escapes that hold a quote or end in one (bytes < 0x20 are
            # always escaped in JSON text, so neither occurs otherwise): then every quote left delimits a string
            raw = _hide_escapes(raw)
        parts = raw.split(b'"')  # outside, string, outside, string, …
        strings = set(parts[1::2])
        memo, changing = self._json_memo, self._json_changing
        changed = {token: changing[token] for token in changing.keys() & strings}
        for token in strings.difference(memo):  # seen for the first time (or longer than the memo keeps)
            if _ATTENTION_JSON(token) is None:  # no digit, no "@": no default pattern can match (text() says so too)
                done = None
            elif _NO_MATCH_JSON(token) is not None:  # an id or a time, new each trial: as text() does, not remembered
                continue
            else:
                done = self._json_string(token, escaped)
            if len(token) <= MEMO_MAX_CHARS:
                if len(memo) >= MEMO_ENTRIES:
                    memo.clear()
                    changing.clear()
                memo[token] = done
                if done is not None:
                    changing[token] = done
            if done is not None:
                changed[token] = done
        for token in changed:
            if b'"' + token + b'":' in raw:  # a key: keys redacted alike need the value's walk (their "#2")
                return None
        if changed:
            raw = _replaced(raw, parts, {t: _hide_escapes(d) for t, d in changed.items()} if escaped else changed)
        return raw.replace(b"\x01\x01", b"\\\\").replace(b"\x02\x02", b'\\"') if escaped else raw

    def _json_string(self, token: bytes, escaped: bool) -> bytes | None:
        """A string's redacted JSON text (without its quotes), or ``None`` when redaction leaves it as it is."""
        if escaped and (b"\\" in token or b"\x01" in token or b"\x02" in token):
            token = token.replace(b"\x01\x01", b"\\\\").replace(b"\x02\x02", b'\\"')
            value = json.loads(b'"' + token + b'"')
        else:
            value = token.decode("utf-8")
        redacted = self.text(value)
        if redacted == value:
            return None
        return to_json(redacted)[1:-1]

    def value(self, data: Any) -> Any:
        """Redact any JSON-like structure (returns a new structure); keys are redacted like values."""
        if not self.enabled:
            return data
        return self._value(data)

    def _value(self, data: Any) -> Any:
        kind = type(data)
        if kind is dict:
            return self._dict(data)
        if kind is list or kind is tuple:
            return self._list(data)
        if isinstance(data, str):
            return self.text(data)
        if isinstance(data, dict):
            return self._dict(data)
        if isinstance(data, list | tuple):
            return self._list(data)
        return data

    # Strings are checked inline below (a record holds hundreds, a method call each adds up): with only the
    # default patterns, one without an "@" or a digit is kept as it is, as text() would. Exact types are
    # tested first (what a record's JSON dump holds); subclasses take the general path.

    def _dict(self, data: Mapping[Any, Any]) -> dict[Any, Any]:
        plain, text, fields = self._plain, self.text, self.fields
        out: dict[Any, Any] = {}
        # per key redacted alike, the next "#N" to try: a scan from "#2" each time made 10,000 e-mail keys
        # quadratic (29 s). Only once a key has changed can two keys collide.
        suffixes: dict[Any, int] | None = None
        for k, v in data.items():
            if type(k) is str:
                key = k if plain(k) is None else text(k)
            else:
                key = text(k) if isinstance(k, str) and plain(k) is not None else k
            if suffixes is not None or key is not k:
                if suffixes is None:
                    suffixes = {}
                if key in out:  # two keys redacted alike (two e-mail addresses): keep both values
                    n = suffixes.get(key, 2)
                    while f"{key}#{n}" in out:  # a key spelled "x#2" already: skip it
                        n += 1
                    suffixes[key] = n + 1
                    key = f"{key}#{n}"
            if fields and k in fields and v is not None:
                out[key] = self.placeholder(k, v if isinstance(v, str) else json.dumps(v, sort_keys=True, default=str))
                continue
            kind = type(v)
            if kind is str:
                out[key] = v if plain(v) is None else text(v)
            elif kind in _SCALARS:
                out[key] = v
            elif kind is dict:
                out[key] = self._dict(v)
            elif kind is list:
                out[key] = self._list(v)
            elif isinstance(v, str | dict | list | tuple):
                out[key] = self._value(v)
            else:
                out[key] = v
        return out

    def _list(self, data: list[Any] | tuple[Any, ...]) -> list[Any]:
        plain, text = self._plain, self.text
        out = []
        for v in data:
            kind = type(v)
            if kind is str:
                out.append(v if plain(v) is None else text(v))
            elif kind in _SCALARS:
                out.append(v)
            elif kind is dict:
                out.append(self._dict(v))
            elif isinstance(v, str | dict | list | tuple):
                out.append(self._value(v))
            else:
                out.append(v)
        return out


def _marked(kind: str, mark: Mark, m: re.Match[str]) -> str:
    return mark(kind, m.group(0))


def _checked(check: Callable[[re.Match[str], Mark], str], mark: Mark, m: re.Match[str]) -> str:
    return check(m, mark)


def _hide_escapes(text: bytes) -> bytes:
    """JSON text with its escaped backslashes and quotes as same-length stand-ins (``\\x01\\x01``, ``\\x02\\x02``):
    what is left of its quotes delimits strings. :meth:`Redactor.json_text` puts them back at the end."""
    return text.replace(b"\\\\", b"\x01\x01").replace(b'\\"', b"\x02\x02")


def _replaced(raw: bytes, parts: list[bytes], changed: dict[bytes, bytes]) -> bytes:
    """``raw`` with every string that is a key of ``changed`` replaced by its value (JSON text without quotes,
    escapes hidden); ``parts`` is ``raw`` split at its quotes.

    Each ``"token"`` is replaced in the whole text at once (~1,400 parts need not be joined again). That is right
    when every ``"token"`` in the text is a string: what lies between two strings (``:``, ``,123,``, ``],[``) is
    made of the characters of :data:`_BETWEEN_STRINGS` and holds a ``:`` or a ``,``, so a token that is not made
    so is never that; nothing inserted holds a quote, so every quote stays a delimiter; and no replacement is
    itself a token to replace, so none is replaced twice. Otherwise (rare) the strings are replaced one by one
    and the parts joined again."""
    if any(_may_be_between(token) for token in changed) or not changed.keys().isdisjoint(changed.values()):
        parts[1::2] = [changed.get(token, token) for token in parts[1::2]]
        return b'"'.join(parts)
    for token, done in changed.items():
        raw = raw.replace(b'"' + token + b'"', b'"' + done + b'"')
    return raw


_BETWEEN_STRINGS = b"0123456789+-.eE,:[]{}truefalsnNaIinfity"
"""Every character that compact JSON can hold between the end of one string and the start of the next: numbers,
``true``, ``false``, ``null``, ``NaN``, ``Infinity`` and the punctuation."""


def _may_be_between(token: bytes) -> bool:
    """Whether ``token`` could be the text between two strings (see :func:`_replaced`)."""
    return (b":" in token or b"," in token) and not token.translate(None, _BETWEEN_STRINGS)


NO_REDACTION = Redactor(enabled=False)
