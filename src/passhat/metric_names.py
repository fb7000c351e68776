"""pass^k and pass@k, spelled one way, and which k a table shows.

In code and in every file a run writes they are ``pass_hat_k`` and ``pass_at_k`` (summary.json's keys, the gate
rules' kinds, a comparison's ``pass_hat_4``); on a screen, in a report and in the docs they are ``pass^k`` and
``pass@k`` (``pass^4``). This module is the only place either spelling is made from the other, and
:func:`shown_ks` is the only place that decides which k a table shows. It imports nothing: the command line
reads it before any statistics are loaded.
"""

from __future__ import annotations

from typing import Literal, cast

PassMetric = Literal["pass_hat_k", "pass_at_k"]
"""``pass_hat_k``: all k trials pass (reliability, pass^k). ``pass_at_k``: at least one of k passes (capability,
pass@k)."""
METRICS: tuple[PassMetric, ...] = ("pass_hat_k", "pass_at_k")
SYMBOLS: dict[PassMetric, str] = {"pass_hat_k": "pass^k", "pass_at_k": "pass@k"}
"""How a screen writes each metric with k unspecified."""


def label(metric: PassMetric, k: int | str = "k") -> str:
    """``pass^4`` / ``pass@4``: the metric as a reader sees it."""
    return f"{SYMBOLS[metric][:-1]}{k}"


def metric_key(metric: PassMetric, k: int) -> str:
    """``pass_hat_4`` / ``pass_at_4``: the metric at one k, as a comparison's ``metrics`` and a gate report key it."""
    return f"{metric.removesuffix('_k')}_{k}"


def parse_metric_key(key: str) -> tuple[PassMetric, int]:
    """The inverse of :func:`metric_key`; ``ValueError`` for anything else."""
    family, _, k = key.rpartition("_")
    metric = f"{family}_k"
    if metric not in METRICS or not k.isdigit():
        raise ValueError(f"not a metric key (pass_hat_K or pass_at_K): {key!r}")
    return cast(PassMetric, metric), int(k)


def key_label(key: str) -> str:
    """``pass_hat_4`` → ``pass^4``."""
    return label(*parse_metric_key(key))


def shown_ks(n: int) -> list[int]:
    """The k a table shows for n trials per case: 1, 2, 4, 8, … up to n, and n itself (every k is in the files)."""
    ks = [k for k in (2**i for i in range(max(n, 1).bit_length())) if k <= n]
    return ks + ([n] if n and ks[-1] != n else [])


def headline_ks(n: int) -> list[int]:
    """The two ends of :func:`shown_ks` (pass^1 and pass^n), for a one-line description of a run."""
    ks = shown_ks(n)
    return sorted({ks[0], ks[-1]}) if ks else []
