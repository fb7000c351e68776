"""Results: tallies and summaries computed from a run's records.

Names are imported when first asked for (PEP 562): ``passhat show`` of a finished run reads its
summary.json through ``results.written`` alone, without the statistics (numpy) and record models that
computing a summary needs.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from passhat.results.summary import (
        build_summary,
        current_summary,
        read_current_summary,
        read_summary,
        summarize_run,
        tag_keys,
    )
    from passhat.results.tally import CaseTally, tally

_HOME = {
    **dict.fromkeys(("build_summary", "current_summary", "read_current_summary", "read_summary", "summarize_run",
                     "tag_keys"), "summary"),
    **dict.fromkeys(("CaseTally", "tally"), "tally"),
}


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module 'passhat.results' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"passhat.results.{home}"), name)
    globals()[name] = value
    return value


__all__ = ["CaseTally", "build_summary", "current_summary", "read_current_summary", "read_summary", "summarize_run",
           "tag_keys", "tally"]
