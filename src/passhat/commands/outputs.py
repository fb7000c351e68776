"""CI outputs of ``run`` and ``gate``: JUnit XML, and the Markdown summary (to a file and to GitHub).

GitHub Actions shows whatever a step appends to the file named by ``$GITHUB_STEP_SUMMARY``; we append
(never overwrite) because other steps may have written there too.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from passhat.report.junit import junit_xml
from passhat.report.markdown import markdown_summary
from passhat.runner.store import RunStore

STEP_SUMMARY_ENV = "GITHUB_STEP_SUMMARY"


def write_ci_outputs(run_folder: Path, summary: dict[str, Any], gate: dict[str, Any] | None, *,
                     junit: Path | None, summary_md: Path | None) -> list[Path]:
    """Write the requested outputs; returns the paths written (for the user's log)."""
    written: list[Path] = []
    if junit is not None:
        junit.parent.mkdir(parents=True, exist_ok=True)
        junit.write_text(junit_xml(summary, RunStore(run_folder).iter_records(), gate), "utf-8")
        written.append(junit)
    step_summary = os.environ.get(STEP_SUMMARY_ENV)
    if summary_md is None and not step_summary:
        return written
    text = markdown_summary(summary, gate)
    if summary_md is not None:
        summary_md.parent.mkdir(parents=True, exist_ok=True)
        summary_md.write_text(text, "utf-8")
        written.append(summary_md)
    if step_summary:
        with Path(step_summary).open("a", encoding="utf-8") as fh:
            fh.write(text + "\n")
        written.append(Path(step_summary))
    return written
