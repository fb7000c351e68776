"""``passhat cases lint``: everything wrong with a suite at once, before any trial runs.

Errors mean the suite cannot measure what it claims (exit non-zero); warnings are probable mistakes.
See docs/datasets.md for every finding code.
"""

from __future__ import annotations

from passhat.cases.suite import resolve_suite_folder
from passhat.lint.checks import duplicate_ids, families, grading, near_duplicates, unfinished
from passhat.lint.coverage import coverage
from passhat.lint.findings import Finding, LintReport, Severity
from passhat.lint.loading import load_for_lint
from passhat.lint.similarity import THRESHOLD


def lint_suite(ref: str, *, threshold: float = THRESHOLD) -> LintReport:
    """Lint a built-in suite name or a folder of case files. Raises ``CaseError`` if it is neither."""
    name, folder = resolve_suite_folder(ref)
    cases, ids, findings = load_for_lint(folder)
    findings += duplicate_ids(ids)
    findings += families(cases)
    findings += near_duplicates(cases, threshold)
    for lc in cases:
        findings += grading(lc)
        findings += unfinished(lc)
    order = {"error": 0, "warning": 1}
    findings.sort(key=lambda f: (order[f.severity], f.file, f.field))
    return LintReport(name, str(folder), len(ids), findings, coverage(cases))


__all__ = ["Finding", "LintReport", "Severity", "lint_suite"]
