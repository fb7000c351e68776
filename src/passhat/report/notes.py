"""The lines ``passhat run`` and ``passhat show`` print under a summary (no statistics loaded: show's fast path)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from passhat.models import Manifest, Summary


def run_notes(summary: Summary, manifest: Manifest) -> list[str]:
    """Lines the run and show commands print under the summary: selection, snapshot, replayed tools."""
    notes = []
    sel = manifest.selection
    if sel:
        notes.append(f"cases selected by {sel.describe}: {len(sel.cases)} of {sel.full_suite.cases}")
    if summary.suite.split:
        notes.append(f"restricted to split {summary.suite.split!r}: {summary.suite.cases} case(s)")
    if manifest.frozen:
        notes.append(f"suite matches the frozen snapshot {manifest.frozen.path}")
    replayed = summary.suite.replayed_trials
    if replayed:
        cases = [f"{c.id} ({c.replayed})" for c in summary.cases if c.replayed]
        notes.append(f"{replayed} trial(s) ran on replayed external tools, not the real services: {', '.join(cases)}")
    if manifest.regrade:
        notes.append(f"re-graded from {manifest.regrade.source} (agent not re-run)")
    return notes
