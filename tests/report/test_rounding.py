"""Printed intervals are rounded outwards everywhere, so one bound reads the same on one screen."""

from __future__ import annotations

import random
from typing import Any

import pytest

from passhat.models import Interval
from passhat.report import terminal
from passhat.rounding import down, interval, span, up


@pytest.mark.parametrize("digits", [2, 3])
def test_printed_ends_hold_the_computed_interval(digits: int) -> None:
    rng = random.Random(7)
    for _ in range(2000):
        low, high = sorted(rng.uniform(-1, 1) for _ in range(2))
        assert float(down(low, digits)) <= low <= float(up(low, digits))
        assert float(down(high, digits)) <= high <= float(up(high, digits))
        assert float(up(high, digits)) - high < 10**-digits and low - float(down(low, digits)) < 10**-digits


def test_ends_already_at_the_precision_stay_put() -> None:
    # 0.82 is stored as 0.81999…: rounding down must not print 0.81
    assert interval(0.82, 0.9) == "[0.82, 0.90]"
    assert interval(1 - 0.18, 0.1 + 0.2) == "[0.82, 0.30]"
    assert span(0.0, 1.0) == "0.00–1.00"


def test_a_zero_end_has_no_sign() -> None:
    assert interval(-0.0, 0.0, 3, signed=True) == "[+0.000, +0.000]"
    assert interval(-1e-7, 1e-7, 3, signed=True) == "[-0.001, +0.001]"


def test_the_table_and_the_headline_print_one_bound_alike() -> None:
    """Stop 36's review: a lower bound of 0.819 read 0.81 in the headline and 0.82 in the table."""
    entry = Interval(estimate=1.0, ci_low=0.819, ci_high=1.0, method="gaffke", cases=16)
    assert terminal._ci(entry) == "1.000 [0.81, 1.00]"
    assert span(0.819, 1.0) == "0.81–1.00"


def test_the_terminal_names_the_interval_the_summary_used(builtin_run: Any) -> None:
    """The suite table said "BCa ∪ pseudo-case" a year after the intervals became Gaffke's."""
    from rich.console import Console

    from passhat.models import Summary

    summary = Summary.model_validate_json((builtin_run("refunds", "careful", 2) / "summary.json").read_text())
    methods = {e.method for e in summary.suite.pass_hat_k.values()}
    console = Console(record=True, width=200)
    terminal.print_summary(summary, console)
    text = console.export_text()
    assert methods == {"gaffke"} and "Gaffke interval" in text and "BCa" not in text
    first = summary.suite.pass_hat_k[1]
    assert first.ci_low is not None and first.ci_high is not None
    assert f"{first.estimate:.3f} {interval(first.ci_low, first.ci_high)}" in text
