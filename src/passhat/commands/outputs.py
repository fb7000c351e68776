"""CI outputs of ``run`` and ``gate``: JUnit XML, and the Markdown summary (to a file and to GitHub).

GitHub Actions shows whatever a step appends to the file named by ``$GITHUB_STEP_SUMMARY``; we append
(never overwrite) because other steps may have written there too. The JUnit and Markdown files are
written whole or not at all (:func:`passhat.report.files.write_atomic`).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from passhat.report.files import write_atomic
from passhat.runner.store import RunStore

if TYPE_CHECKING:
    from passhat.models import GateResult, Summary

STEP_SUMMARY_ENV = "GITHUB_STEP_SUMMARY"


def write_ci_outputs(run_folder: Path, summary: Summary, gate: GateResult | None, *,
                     junit: Path | None, summary_md: Path | None) -> list[Path]:
    """Write the requested outputs; returns the paths written (for the user's log)."""
    written: list[Path] = []
    if junit is not None:
        from passhat.report.junit import junit_xml  # each writer is imported only for its output (xml.etree)

        junit.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(junit, junit_xml(summary, RunStore(run_folder).iter_records(), gate))
        written.append(junit)
    step_summary = os.environ.get(STEP_SUMMARY_ENV)
    if summary_md is None and not step_summary:
        return written
    from passhat.report.markdown import markdown_summary  # a run without CI outputs, at a desk, needs neither

    text = markdown_summary(summary, gate)
    if summary_md is not None:
        summary_md.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(summary_md, text)
        written.append(summary_md)
    if step_summary:
        with Path(step_summary).open("a", encoding="utf-8") as fh:
            fh.write(text + "\n")
        written.append(Path(step_summary))
    return written
