"""Results: tallies and summaries computed from a run's records."""

from passhat.results.summary import (
    build_summary,
    current_summary,
    read_current_summary,
    read_summary,
    summarize_run,
    tag_keys,
)
from passhat.results.tally import CaseTally, tally

__all__ = ["CaseTally", "build_summary", "current_summary", "read_current_summary", "read_summary", "summarize_run",
           "tag_keys", "tally"]
