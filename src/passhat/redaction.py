"""Redaction: personal data never reaches the run folder or an exported span unless the user opts out.

Tool results, messages, diffs and grade reasons can all carry what the sandbox's fixture holds —
e-mail addresses, phone numbers, card numbers. The runner passes every record through a
:class:`Redactor` before it is written, so everything downstream (summary, reports, OTLP export,
regression cases) only ever sees redacted values. Defaults cover e-mail, phone and card numbers;
users add field names (any value under that key is replaced) and named patterns.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

DEFAULT_PATTERNS: dict[str, str] = {
    "email": r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}",
    "card": r"(?<![\d-])(?:\d[ -]?){12,18}\d(?![\d-])",
    "phone": r"(?<![\w+])(?:\+\d{1,3}[ -]?\d{1,4}(?:[ -]?\d{2,4}){2,4}|1[3-9]\d{9}|\(?\d{3}\)?[ .-]\d{3}[ .-]\d{4})(?![\w])",
}


def luhn_ok(digits: str) -> bool:
    """The Luhn checksum card numbers carry; keeps long order numbers and IDs from being redacted."""
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch)
        if i % 2 == 1:
            d = d * 2 - 9 if d * 2 > 9 else d * 2
        total += d
    return total % 10 == 0


@dataclass
class Redactor:
    """Replaces matches of named patterns, and whole values under named fields, with ``[REDACTED:name]``."""

    patterns: dict[str, str] = field(default_factory=lambda: dict(DEFAULT_PATTERNS))
    fields: set[str] = field(default_factory=set)
    """Keys whose values are replaced entirely, wherever they appear (e.g. ``national_id``)."""
    enabled: bool = True

    def __post_init__(self) -> None:
        self._compiled = [(name, re.compile(p)) for name, p in self.patterns.items()]

    @classmethod
    def build(cls, *, extra_fields: Iterable[str] = (), extra_patterns: Mapping[str, str] | None = None,
              enabled: bool = True) -> Redactor:
        """Defaults plus the user's additions."""
        return cls(patterns={**DEFAULT_PATTERNS, **(extra_patterns or {})}, fields=set(extra_fields), enabled=enabled)

    def describe(self) -> dict[str, Any]:
        """What the manifest records about redaction (rules, not values)."""
        return {"enabled": self.enabled, "patterns": sorted(self.patterns), "fields": sorted(self.fields)}

    def text(self, value: str) -> str:
        """Redact one string."""
        for name, rx in self._compiled:
            if name == "card":
                value = rx.sub(lambda m: self._card(m), value)
            else:
                value = rx.sub(f"[REDACTED:{name}]", value)
        return value

    @staticmethod
    def _card(m: re.Match[str]) -> str:
        digits = re.sub(r"\D", "", m.group(0))
        return "[REDACTED:card]" if 13 <= len(digits) <= 19 and luhn_ok(digits) else m.group(0)

    def value(self, data: Any) -> Any:
        """Redact any JSON-like structure (returns a new structure)."""
        if not self.enabled:
            return data
        if isinstance(data, str):
            return self.text(data)
        if isinstance(data, dict):
            return {k: (f"[REDACTED:{k}]" if k in self.fields and data[k] is not None else self.value(v))
                    for k, v in data.items()}
        if isinstance(data, list | tuple):
            return [self.value(v) for v in data]
        return data


NO_REDACTION = Redactor(enabled=False)
