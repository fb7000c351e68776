"""The run in one sentence, first in the terminal, the HTML report and the CI step summary.

"careful: 16 of 16 cases passed all 4 trials; pass^4 1.00 (95 % interval 0.79–1.00); with 64 trials, a
failure rate of 1 in 21 or higher, if every case shared it, would have shown with 95 % probability."

Every figure is a part with the anchor of its definition in docs/statistics.md, so each output can point
to it (a link in HTML and Markdown, a pointer line in the terminal). The wording is chosen so that each
clause is true as printed:

- interval ends are rounded outwards (the low end down, the high end up), so the printed interval
  contains the computed one;
- the last clause appears only when no graded trial failed. With T graded trials, a failure rate p
  shared by every trial leaves all T passing with probability (1 − p)^T; that is at most 5 % exactly
  when p ≥ p* = 1 − 0.05^(1/T), the one-sided Clopper–Pearson upper bound for 0 failures in T
  (``stats.clopper_pearson``). The sentence says "1 in N" with N = ⌊1/p*⌋, so 1/N ≥ p* (or, from 1 in 10
  on, p* as a percentage rounded up). It does not
  claim that a failure confined to one case would have shown: one case has only its k trials (see
  docs/statistics.md#what-a-clean-run-rules-out).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from passhat.metric_names import label
from passhat.rounding import span

if TYPE_CHECKING:
    from passhat.models import Summary

DOCS = "docs/statistics.md"
ANCHORS = {
    "cases": "the-headline",
    "pass_hat_k": "per-suite",
    "interval": "per-suite",
    "errors": "per-case",
    "detectable": "what-a-clean-run-rules-out",
}
"""A part's kind → the anchor of its definition in docs/statistics.md."""
DEFINITIONS = {
    "cases": "A case passed all its trials when every one of its k trials was graded pass.",
    "pass_hat_k": "pass^k: the chance that all k trials of a case pass, C(c,k)/C(n,k) per case, averaged over "
                  "the cases with at least k graded trials.",
    "interval": "The 95 % interval of the suite's pass^k over cases: Gaffke's bounds (the Bayesian bootstrap "
                "over cases with one pseudo-case at the far end), exact Clopper–Pearson when every case passed or "
                "failed all its trials; its ends are rounded outwards, as everywhere passhat prints an interval.",
    "errors": "Infrastructure errors are neither passes nor failures: they are retried once and what remains "
              "is counted apart.",
    "detectable": "If every trial failed at the same rate p, all T graded trials pass with probability "
                  "(1 − p)^T; that is at most 5 % for p ≥ 1 − 0.05^(1/T). A failure confined to one case is "
                  "only seen through that case's own trials.",
}


@dataclass(frozen=True)
class Part:
    """A piece of the sentence; ``kind`` names the definition it points to (None: plain words)."""

    text: str
    kind: str | None = None

    @property
    def anchor(self) -> str | None:
        return ANCHORS.get(self.kind) if self.kind else None


@dataclass(frozen=True)
class Headline:
    parts: tuple[Part, ...]

    @property
    def text(self) -> str:
        """The sentence as plain text."""
        return "".join(p.text for p in self.parts)

    def kinds(self) -> list[str]:
        """The kinds of figures it holds, in order, each once (for a list of definitions)."""
        return list(dict.fromkeys(p.kind for p in self.parts if p.kind))

    def pointer(self) -> str:
        """Where each figure is defined, in one line: ``pass^4 and its interval: docs/statistics.md#per-suite; …``."""
        by_anchor: dict[str, list[str]] = {}
        for kind in self.kinds():
            by_anchor.setdefault(ANCHORS[kind], []).append(LABELS[kind])
        return "definitions: " + "; ".join(f"{' and '.join(labels)} {DOCS}#{anchor}"
                                           for anchor, labels in by_anchor.items())


LABELS = {"cases": "the case count", "pass_hat_k": label("pass_hat_k"), "interval": "its interval",
           "errors": "infrastructure errors", "detectable": "the detectable failure rate"}


def detectable_rate(trials: int, confidence: float = 0.95) -> float:
    """The smallest per-trial failure rate that ``trials`` all-passing trials rule out at ``confidence``:
    1 − (1 − confidence)^(1/trials), the Clopper–Pearson one-sided upper bound for 0 failures."""
    from passhat.stats import clopper_pearson

    low, _ = clopper_pearson(trials, trials, confidence, "greater")
    return 1.0 - low


def one_in(rate: float) -> int:
    """N with 1/N ≥ ``rate`` (so "1 in N or higher" stays within what was ruled out)."""
    return max(1, math.floor(1 / rate + 1e-12))


def rate_words(rate: float) -> str:
    """``1 in 21`` for small rates, ``78 %`` (rounded up) from 1 in 10 on: each at least ``rate``."""
    n = one_in(rate)
    return f"1 in {n}" if n >= 10 else f"{math.ceil(rate * 100 - 1e-9):.0f} %"


def agent_label(agent: object) -> str:
    """The agent as the sentence names it: a file spec by its file name (``agents.py:good``), else as given."""
    text = str(agent)
    target, sep, attr = text.rpartition(":")
    if sep and target.endswith(".py") and "/" in target:
        return f"{target.rsplit('/', 1)[1]}:{attr}"
    return text


def headline(summary: Summary) -> Headline:
    """The sentence for a run's summary."""
    suite, cases = summary.suite, summary.cases
    k = suite.trials_per_case
    total = len(cases)
    perfect = sum(1 for c in cases if c.n == k and c.successes == k and not c.errors)
    failed = sum(1 for c in cases if c.successes < c.n)
    trials = "its trial" if k == 1 else f"all {k} trials"
    parts = [Part(f"{agent_label(summary.agent)}: "), Part(f"{perfect} of {total} cases passed {trials}", "cases")]
    if failed:
        parts.append(Part(f", {failed} failed at least once", "cases"))
    parts.append(Part("; "))
    entry = suite.pass_hat_k.get(k)
    pct = f"{round(suite.confidence * 100):g} %"
    if entry is not None and entry.estimate is not None and entry.ci_low is not None and entry.ci_high is not None:
        parts += [Part(f"pass^{k} {entry.estimate:.2f}", "pass_hat_k"), Part(" ("),
                  Part(f"{pct} interval {span(entry.ci_low, entry.ci_high)}", "interval"), Part(")")]
    else:
        parts.append(Part(f"pass^{k} — (no case has {k} graded trials)", "pass_hat_k"))
    if suite.errors:
        parts += [Part("; "), Part(f"{suite.errors} trial(s) ended in infrastructure errors, counted as neither "
                                   "pass nor fail", "errors")]
    graded = suite.trials
    if graded and not failed:
        rate = detectable_rate(graded, suite.confidence)
        parts += [Part("; "), Part(f"with {graded} trials, a failure rate of {rate_words(rate)} or higher, if every "
                                   f"case shared it, would have shown with {pct} probability", "detectable")]
    parts.append(Part("."))
    return Headline(tuple(parts))


__all__ = ["ANCHORS", "DEFINITIONS", "DOCS", "LABELS", "Headline", "Part", "agent_label", "detectable_rate", "headline",
           "one_in", "rate_words"]
