"""Lint findings: one problem, where it is (file, field), how bad it is, and what to do."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

Severity = Literal["error", "warning"]
"""``error``: the suite cannot measure what it claims (exit non-zero). ``warning``: probably wrong
(exit 0 unless ``--strict``)."""

Code = Literal[
    "yaml", "schema", "domain", "unknown-tool", "unknown-fixture", "unknown-table", "unknown-column", "bad-sql",
    "bad-regex", "unknown-grader", "bad-grader-params", "bad-reference", "contradiction", "duplicate-id", "family-leak",
    "family-spread", "near-duplicate", "no-state-assertion", "no-assertions", "unfinished", "cannot-fire",
]
"""The closed vocabulary of findings; docs/datasets.md describes each."""

SEVERITY: dict[str, Severity] = {
    "yaml": "error", "schema": "error", "domain": "error", "unknown-tool": "error", "unknown-fixture": "error",
    "unknown-table": "error", "unknown-column": "error", "bad-sql": "error", "bad-regex": "error",
    "unknown-grader": "error", "bad-grader-params": "error", "bad-reference": "error", "contradiction": "error",
    "duplicate-id": "error", "family-leak": "error", "family-spread": "warning", "near-duplicate": "warning",
    "no-state-assertion": "error", "no-assertions": "error", "unfinished": "error", "cannot-fire": "error",
}


@dataclass(frozen=True)
class Finding:
    """One problem in one file (``field`` is a dotted path inside the case, '' for the whole file)."""

    code: Code
    file: str
    field: str
    message: str
    case_id: str | None = None

    @property
    def severity(self) -> Severity:
        return SEVERITY[self.code]

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "severity": self.severity}

    def line(self) -> str:
        where = f"{self.file}: {self.field}" if self.field else self.file
        return f"{self.severity} [{self.code}] {where}: {self.message}"


@dataclass
class LintReport:
    """Every finding of a suite plus its coverage summary."""

    suite: str
    folder: str
    cases: int = 0
    findings: list[Finding] = field(default_factory=list)
    coverage: dict[str, Any] = field(default_factory=dict)

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == "error"]

    @property
    def warnings(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == "warning"]

    def ok(self, strict: bool = False) -> bool:
        """No errors (and, when ``strict``, no warnings either)."""
        return not self.errors and not (strict and self.warnings)

    def to_json(self) -> dict[str, Any]:
        return {"suite": self.suite, "folder": self.folder, "cases": self.cases,
                "errors": len(self.errors), "warnings": len(self.warnings),
                "findings": [f.to_json() for f in self.findings], "coverage": self.coverage}
