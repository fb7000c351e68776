"""``reply_contains`` with ``normalize: [numbers, whitespace, unicode]`` on hostile replies: CPU time at
25,000 … 200,000 characters, and the ratio per doubling (linear: ~2; quadratic: ~4).

The replies are those of ``tests/graders/test_reply_normalisation.py`` (``HOSTILE``), built to make a
backtracking number or whitespace pattern quadratic; the unit test checks what the matching decides on
them, this script how its time grows. Run: ``python bench/bench_reply_normalisation.py``.
"""

from __future__ import annotations

import time

from passhat.cases.assertions.textmatch import contains

STEPS = ("numbers", "whitespace", "unicode")
HOSTILE = {"commas": ("1,", "x"), "digits": ("9", "."), "groups": ("1,234", "5"), "blanks": (" \t", "")}
"""Each hostile reply is a unit repeated, then a tail (as in the unit test, whose replies are 100,000 characters)."""


def cpu(reply: str) -> float:
    started = time.process_time()
    contains([reply], "1,234.5 x", STEPS)
    return time.process_time() - started


def main() -> None:
    for name, (unit, tail) in HOSTILE.items():
        previous = None
        for size in (25_000, 50_000, 100_000, 200_000):
            spent = min(cpu(unit * (size // len(unit)) + tail) for _ in range(3))
            ratio = f"{spent / previous:5.1f}× the previous" if previous else ""
            print(f"{name:>7} {size:>8,} characters: {spent * 1000:8.2f} ms CPU  {ratio}")
            previous = max(spent, 1e-6)


if __name__ == "__main__":
    main()
