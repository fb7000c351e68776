"""Did the run measure the agent? A run whose trials mostly ended in infrastructure errors did not.

Such a run used to exit 0 like any finished run, so CI went green on an outage. Now ``passhat run``
says so and exits ``EXIT_INCOMPLETE`` (4) when more than ``--max-error-rate`` of its trials are
``error``; a gate FAIL (exit 1) found on the evidence there is still wins, since it stands whatever the
missing trials would have shown.

A run on Ray or on forked worker processes that had to kill and replace workers (an in-process agent held a
worker's event loop for good: the manifest's ``replaced_workers``) exits 4 too, whatever its error rate: it
recorded every trial, but the local executor aborts such a run, and CI must not go green on one executor and red on the other.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from passhat.runner.records import TrialRecord

if TYPE_CHECKING:
    from passhat.models import Summary

EXIT_INCOMPLETE = 4
DEFAULT_MAX_ERROR_RATE = 0.25


def error_share(summary: Summary) -> tuple[int, int]:
    """(trials that ended in ``error``, all trials recorded)."""
    errors = summary.suite.errors
    return errors, errors + sum(c.n for c in summary.cases)


def headline(error: str | None) -> str:
    """One line saying what went wrong: a traceback's last line (the exception), a message's first."""
    lines = (error or "unknown").strip().splitlines() or ["unknown"]
    return (lines[-1] if lines[0].startswith("Traceback") else lines[0])[:300]


def commonest_error(records: Iterable[TrialRecord]) -> tuple[str, int] | None:
    """The most frequent headline among the ``error`` trials, with its count."""
    lines = Counter(headline(r.error) for r in records if r.outcome == "error")
    return lines.most_common(1)[0] if lines else None


def incomplete(summary: Summary, records: Iterable[TrialRecord], max_error_rate: float,
               replaced_workers: Sequence[str] = ()) -> str | None:
    """Why the run did not measure the agent cleanly, or ``None`` when no worker had to be replaced and its
    errors stay within ``max_error_rate``."""
    if replaced_workers:
        return (f"{len(replaced_workers)} worker(s) had to be killed and replaced (the manifest's "
                "replaced_workers says why): every trial was recorded, but the local executor would have aborted "
                f"this run; first: {replaced_workers[0]}")
    errors, total = error_share(summary)
    if total == 0 or errors / total <= max_error_rate:
        return None
    top = commonest_error(records)
    cause = f"; most often ({top[1]}×): {top[0]}" if top else ""
    return (f"{errors} of {total} trial(s) ({errors / total:.0%}) ended in infrastructure errors, more than "
            f"--max-error-rate {max_error_rate:g}: the run did not measure the agent{cause}")


def exit_code(gate_code: int, problem: str | None) -> int:
    """A gate FAIL stands; otherwise an incomplete run exits 4 (not 0, not INCONCLUSIVE's 3)."""
    if problem is None or gate_code == 1:
        return gate_code
    return EXIT_INCOMPLETE


__all__ = ["DEFAULT_MAX_ERROR_RATE", "EXIT_INCOMPLETE", "commonest_error", "error_share", "exit_code", "incomplete"]
