"""Inline SVG figures for the HTML report, drawn server-side so the page needs no plotting library.

Every figure is a plain string of SVG built from numbers already in the summary: the report stays one
self-contained file that renders offline, prints, and can be checked by a test that counts points.
Values are escaped; numbers are rounded to 0.1 px to keep the page small.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape
from typing import TYPE_CHECKING

import numpy as np

from passhat import metric_names
from passhat.rounding import interval
from passhat.stats.describe import Distribution

if TYPE_CHECKING:
    from passhat.models import Interval, StratumSummary

COLORS = {"pass_hat_k": "#c2410c", "pass_at_k": "#2563eb"}


def _f(x: float) -> str:
    return f"{x:.1f}".rstrip("0").rstrip(".")


def _ci(e: Interval) -> str:
    if e.ci_low is None or e.ci_high is None:
        return f"{e.estimate:.3f}"
    return f"{e.estimate:.3f} {interval(e.ci_low, e.ci_high, 3)} ({e.method or ''})"


def _tick_ks(n: int, most: int = 16) -> list[int]:
    """The k axis's tick labels: all of them when few, otherwise about ``most`` evenly spaced plus the last (the
    curve itself draws every k; which k a table shows is :func:`passhat.metric_names.shown_ks`)."""
    step = max(1, -(-n // most))
    return sorted({*range(1, n + 1, step), n})


def curve_svg(block: StratumSummary, n: int, *, width: int = 560, height: int = 260) -> str:
    """pass^k and pass@k against k = 1..n: a line, a shaded 95 % band and one point (with tooltip) per k."""
    left, right, top, bottom = 44, 12, 12, 34
    pw, ph = width - left - right, height - top - bottom

    def x(k: int) -> float:
        return left + (pw / 2 if n <= 1 else (k - 1) * pw / (n - 1))

    def y(v: float) -> float:
        return top + (1 - v) * ph

    parts = [f'<svg class="curve" viewBox="0 0 {width} {height}" width="{width}" height="{height}" role="img" '
             f'aria-label="pass^k and pass@k by k">']
    for v in (0, 0.25, 0.5, 0.75, 1):
        parts.append(f'<line class="grid" x1="{left}" x2="{width - right}" y1="{_f(y(v))}" y2="{_f(y(v))}"/>'
                     f'<text class="tick" x="{left - 6}" y="{_f(y(v) + 4)}" text-anchor="end">{v:g}</text>')
    for k in _tick_ks(n):
        parts.append(f'<text class="tick" x="{_f(x(k))}" y="{height - bottom + 16}" text-anchor="middle">{k}</text>')
    parts.append(f'<text class="axis" x="{left + pw / 2:.0f}" y="{height - 2}" text-anchor="middle">k (trials)</text>')
    for metric in reversed(metric_names.METRICS):  # pass@k first, so pass^k is drawn on top
        curve = getattr(block, metric)
        pts = [(k, e.estimate, e) for k, e in sorted(curve.items()) if e.estimate is not None]
        if not pts:
            continue
        color = COLORS[metric]
        banded = [(k, e.ci_low, e.ci_high) for k, _, e in pts if e.ci_low is not None and e.ci_high is not None]
        if len(banded) > 1:
            upper = " ".join(f"{_f(x(k))},{_f(y(high))}" for k, _, high in banded)
            lower = " ".join(f"{_f(x(k))},{_f(y(low))}" for k, low, _ in reversed(banded))
            parts.append(f'<polygon class="band" fill="{color}" points="{upper} {lower}"/>')
        else:
            parts.extend(f'<line stroke="{color}" x1="{_f(x(k))}" x2="{_f(x(k))}" y1="{_f(y(low))}" '
                         f'y2="{_f(y(high))}"/>' for k, low, high in banded)
        line = " ".join(f"{_f(x(k))},{_f(y(estimate))}" for k, estimate, _ in pts)
        parts.append(f'<polyline class="line" stroke="{color}" points="{line}"/>')
        for k, estimate, e in pts:
            parts.append(f'<circle class="pt {metric.replace("_", "-")}" data-k="{k}" fill="{color}" r="3.5" '
                         f'cx="{_f(x(k))}" cy="{_f(y(estimate))}"><title>{metric_names.label(metric, k)}'
                         f' = {escape(_ci(e))}</title></circle>')
    parts.append("</svg>")
    return "".join(parts)


def interval_svg(rows: Sequence[tuple[str, Interval | None, Interval | None]], *, lo: float = 0.0,
                 hi: float = 1.0, labels: tuple[str, str] = ("pass^1", metric_names.label("pass_hat_k")),
                 width: int = 560) -> str:
    """Dot-and-whisker rows on a common scale: each row shows up to two estimates with their intervals.

    Used for strata (pass^1 and pass^n per tag value) and for compare deltas (scale −1..1, zero line).
    """
    left, right, row_h, top = 170, 16, 22, 8
    height = top + row_h * len(rows) + 24
    pw = width - left - right

    def x(v: float) -> float:
        return left + (min(max(v, lo), hi) - lo) / (hi - lo) * pw

    parts = [f'<svg class="intervals" viewBox="0 0 {width} {height}" width="{width}" height="{height}">']
    for v in np.linspace(lo, hi, 5):
        cls = "grid zero" if v == 0 and lo < 0 else "grid"
        tick = f"{v:+.2g}" if lo < 0 else f"{v:g}"
        parts.append(f'<line class="{cls}" x1="{_f(x(v))}" x2="{_f(x(v))}" y1="{top}" y2="{height - 20}"/>'
                     f'<text class="tick" x="{_f(x(v))}" y="{height - 6}" text-anchor="middle">{tick}</text>')
    for i, (label, first, second) in enumerate(rows):
        cy = top + row_h * i + row_h / 2
        parts.append(f'<text class="label" x="{left - 8}" y="{_f(cy + 4)}" text-anchor="end">{escape(label[:28])}</text>')
        for j, (entry, color) in enumerate(((first, COLORS["pass_at_k"]), (second, COLORS["pass_hat_k"]))):
            if entry is None or entry.estimate is None:
                continue
            yy = cy + (j - 0.5) * 6 if second else cy
            if entry.ci_low is not None and entry.ci_high is not None:
                parts.append(f'<line stroke="{color}" stroke-width="2" x1="{_f(x(entry.ci_low))}" '
                             f'x2="{_f(x(entry.ci_high))}" y1="{_f(yy)}" y2="{_f(yy)}"/>')
            parts.append(f'<circle class="pt" fill="{color}" r="3.5" cx="{_f(x(entry.estimate))}" cy="{_f(yy)}">'
                         f'<title>{escape(label)} {labels[j]} = {escape(_ci(entry))}</title></circle>')
    parts.append("</svg>")
    return "".join(parts)


def bars_svg(counts: dict[str, int], *, width: int = 560) -> str:
    """Horizontal bars, largest first: how many failed trials fall in each failure category."""
    items = sorted(counts.items(), key=lambda kv: -kv[1])
    left, right, row_h = 200, 40, 20
    height = row_h * len(items) + 4
    top_count = max((v for _, v in items), default=1) or 1
    parts = [f'<svg class="bars" viewBox="0 0 {width} {height}" width="{width}" height="{height}">']
    for i, (name, count) in enumerate(items):
        w = (width - left - right) * count / top_count
        yy = i * row_h + 2
        parts.append(f'<text class="label" x="{left - 8}" y="{yy + 13}" text-anchor="end">{escape(name)}</text>'
                     f'<rect class="bar" x="{left}" y="{yy}" width="{_f(max(w, 1))}" height="{row_h - 6}"/>'
                     f'<text class="tick" x="{_f(left + w + 4)}" y="{yy + 12}">{count}</text>')
    parts.append("</svg>")
    return "".join(parts)


def histogram_svg(values: Sequence[float], unit: str, *, bins: int = 24, width: int = 360, height: int = 150) -> str:
    """A histogram of per-trial values with P50 and P95 marked; empty string when nothing varies or exists."""
    data = np.asarray(values, dtype=float)
    spread = Distribution.of(data.tolist())  # np.percentile's P50 and P95 without numpy.ma (its first call imports it)
    if spread is None or spread.max == 0.0:
        return ""
    left, right, top, bottom = 8, 8, 8, 30
    pw, ph = width - left - right, height - top - bottom
    hist, edges = np.histogram(data, bins=bins)
    lo, hi = float(edges[0]), float(edges[-1])
    peak = int(hist.max()) or 1

    def x(v: float) -> float:
        return left + (pw / 2 if hi == lo else (v - lo) / (hi - lo) * pw)

    bw = pw / bins
    parts = [f'<svg class="hist" viewBox="0 0 {width} {height}" width="{width}" height="{height}">']
    for i, c in enumerate(hist):
        if c:
            h = ph * int(c) / peak
            parts.append(f'<rect class="bar" x="{_f(left + i * bw)}" y="{_f(top + ph - h)}" width="{_f(max(bw - 1, 1))}" '
                         f'height="{_f(h)}"><title>{edges[i]:.4g}–{edges[i + 1]:.4g} {escape(unit)}: {c}</title></rect>')
    for row, (name, v) in enumerate((("P50", spread.p50), ("P95", spread.p95))):
        right_half = x(v) > left + pw / 2  # put the label on the side with room for it
        parts.append(f'<line class="mark" x1="{_f(x(v))}" x2="{_f(x(v))}" y1="{top}" y2="{top + ph}"/>'
                     f'<text class="tick" x="{_f(x(v) - 3 if right_half else x(v) + 3)}" y="{top + 10 + 12 * row}" '
                     f'text-anchor="{"end" if right_half else "start"}">{name} {v:.3g}</text>')
    parts.append(f'<text class="tick" x="{left}" y="{height - 4}">{lo:.4g}</text>'
                 f'<text class="tick" x="{width - right}" y="{height - 4}" text-anchor="end">{hi:.4g} {escape(unit)}</text>')
    parts.append("</svg>")
    return "".join(parts)
