"""The lines ``passhat run`` and ``passhat show`` print under a summary (standard library only: show's fast path)."""

from __future__ import annotations

from typing import Any


def run_notes(summary: dict[str, Any], manifest: dict[str, Any]) -> list[str]:
    """Lines the run and show commands print under the summary: selection, snapshot, replayed tools."""
    notes = []
    sel = manifest.get("selection")
    if sel:
        notes.append(f"cases selected by {sel['describe']}: {len(sel['cases'])} of {sel['full_suite']['cases']}")
    if summary["suite"].get("split"):
        notes.append(f"restricted to split {summary['suite']['split']!r}: {summary['suite']['cases']} case(s)")
    if manifest.get("frozen"):
        notes.append(f"suite matches the frozen snapshot {manifest['frozen']['path']}")
    replayed = summary["suite"].get("replayed_trials", 0)
    if replayed:
        cases = [f"{c['id']} ({c['replayed']})" for c in summary["cases"] if c.get("replayed")]
        notes.append(f"{replayed} trial(s) ran on replayed external tools, not the real services: {', '.join(cases)}")
    if manifest.get("regrade"):
        notes.append(f"re-graded from {manifest['regrade']['source']} (agent not re-run)")
    return notes
