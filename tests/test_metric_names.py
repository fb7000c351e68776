"""pass^k and pass@k are spelled one way (passhat.metric_names), and one function says which k a table shows."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from passhat.metric_names import METRICS, headline_ks, key_label, label, metric_key, parse_metric_key, shown_ks

SRC = Path(__file__).parents[1] / "src" / "passhat"


@pytest.mark.parametrize(("n", "ks"), [(0, []), (1, [1]), (2, [1, 2]), (3, [1, 2, 3]), (8, [1, 2, 4, 8]),
                                       (12, [1, 2, 4, 8, 12]), (1000, [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1000])])
def test_a_table_shows_the_powers_of_two_and_n(n: int, ks: list[int]) -> None:
    assert shown_ks(n) == ks
    assert headline_ks(n) == ([] if n == 0 else sorted({1, n}))


def test_the_two_spellings_are_made_from_each_other_here() -> None:
    assert [label(m, 4) for m in METRICS] == ["pass^4", "pass@4"]
    assert [metric_key(m, 16) for m in METRICS] == ["pass_hat_16", "pass_at_16"]
    assert all(parse_metric_key(metric_key(m, k)) == (m, k) for m in METRICS for k in (1, 7, 1000))
    assert key_label("pass_at_2") == "pass@2"
    for bad in ("pass_hat", "pass_hat_k", "pass_over_3", "hat_3"):
        with pytest.raises(ValueError, match="not a metric key"):
            parse_metric_key(bad)


def test_no_other_module_converts_between_the_spellings_or_picks_its_own_ks() -> None:
    """The five spellings and four 'which k to show' functions this module replaced must not come back."""
    offenders = []
    for path in SRC.rglob("*.py"):
        if path.name == "metric_names.py" or "workspaces" in path.parts:
            continue
        text = path.read_text("utf-8")
        for pattern in (r'"pass\^k"', r'"pass@k"', r'"pass_hat"', r'"pass_at"', r"def _ks\(", r"def show_ks\(",
                        r"k & \(k - 1\)", r"(?m)^PassMetric = ", r"Family = Literal"):
            if re.search(pattern, text):
                offenders.append(f"{path.relative_to(SRC)}: {pattern}")
    assert offenders == []
