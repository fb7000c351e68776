"""Sequential gates (issue 22 item 3): error at the margin, power and trials used, against the fixed design.

Run: ``python bench/bench_sequential.py`` (≈ 12 CPU-minutes; ``--reps 400`` to explore, ``--designs`` to pick the
designs, ``--adaptive`` for the item-4 table alone). Each setting
draws ``reps`` suites from a planted population (``bench_coverage``'s: *realistic* = half solved, 10 %
hopeless, the rest Beta(2, 2), pass^1 ≈ 0.70; *strong* = 80 % solved, the rest Beta(9, 1), pass^1 ≈ 0.98),
runs 16 trials per case and gates them, one replication per column, with the functions the gate uses:

- ``pass_hat_k`` (k = 1): ``suite_intervals`` (Gaffke's bounds over cases) at the look's level, clamped to hold its
  estimate as ``coherent_curve`` does; the bar is the population's pass^1 (**margin**: PASS and FAIL are both
  errors there), that minus ``gap`` (**pass**: PASS is right) or plus it (**fail**);
- ``non_inferior`` (pass^1): ``paired_differences`` (t ∪ pseudo-case) against a baseline of 16 trials per
  case from the same population; the candidate's pass rates are the baseline's scaled so the suite drops
  by exactly the margin (**margin**), by nothing (**pass**) or by twice the margin (**fail**).

``gap``, the margin and the failing drop are set per setting (bisection on a pilot of 600 suites) to what the
fixed design decides right 80 % of the time (``pass``, ``fail``: where a design's choices matter most) and 95 %
of the time (``pass95``, ``fail95``: a clear verdict, where a sequential design should save most).

Designs (looks at 4, 8 and 16 trials per case; α = 0.05 one-sided per decision):

- ``fixed``: one look at 16 trials (what ``passhat run -k 16 --gate`` does);
- ``naive``: every look at α (re-gating after more trials, what issue 22 measured at 0.073–0.103);
- ``obf``, ``pocock``, ``hsd-3``, ``hsd-2``: Lan–DeMets O'Brien–Fleming- / Pocock- / Hwang–Shih–DeCani-type
  (γ = −3, −2) spending on the trial scale, boundaries from each replication's estimated correlation
  between looks (``Sequential.levels``); ``a|b``: the PASS side spends ``a``, the FAIL side ``b``;
- ``+``: a side of ``pass_hat_k`` spends nothing at a look where even a perfect look could not decide it
  (``Sequential.spend_at = "decidable_looks"``, design note 033). ``*`` marks what ``--sequential`` ships.

Columns: PASS and FAIL rates (± one Monte-Carlo standard error), the rate of the right decision (PASS in
``margin`` and ``pass*``, FAIL in ``fail*``) minus the fixed design's on the same suites (± its paired error),
and the mean trials per case over the fixed design's 16. The first table checks the bench against the
shipped code: the same suites through ``gate.looks.evaluate_looks`` on in-memory runs must reach the same
decision at the same look. (The big tables bootstrap many suites in one call, which draws other resamples
than one suite alone: the same distribution, so the rates agree, but a suite at a bar can fall either way;
the check therefore runs the bench one suite at a time.)
Then the floor behind a strong suite's late PASS: per setting, the bars, the all-pass lower bound at each look
at its cumulative α (the most it can test at) and the level a perfect look needs to PASS. ``--adaptive``:
issue 22 item 4, trials after look 1 only for cases that were not all-pass or all-fail there (``adaptive_table``).
The last table: coverage of the summary's suite interval (pass^1) at the look the run stopped, the repeated
confidence interval the summary reports (``Sequential.confidence``) and a plain 95 % interval there, and the
bias of the pass^1 estimate at the stop (Monte-Carlo error ≈ sd/√reps ≈ 0.002).
"""

from __future__ import annotations

import argparse
import copy
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from bench_coverage import Draw, mixture, truth

from passhat.compare.runs import LoadedRun, match_cases
from passhat.gate.looks import evaluate_looks
from passhat.gate.schema import GateFile
from passhat.models import Manifest
from passhat.results.tally import CaseTally
from passhat.sequential.design import Sequential
from passhat.sequential.spending import Spending, spent, upper_boundaries
from passhat.stats import paired_differences, suite_intervals
from passhat.stats._special import ndtri

ALPHA = 0.05
LOOKS = (4, 8, 16)
POPULATIONS: dict[str, Draw] = {"realistic": mixture(0.5, 2, 2, 0.1), "strong": mixture(0.8, 9, 1)}
Spec = tuple[Spending, float | None]
"""A spending function and its γ (Hwang–Shih–DeCani only)."""
DESIGNS: dict[str, tuple[Spec, Spec] | None] = {
    "fixed": None, "naive": None,
    "obf": (("obrien_fleming", None), ("obrien_fleming", None)),
    "pocock": (("pocock", None), ("pocock", None)),
    "hsd-2": (("hwang_shih_decani", -2.0), ("hwang_shih_decani", -2.0)),
    "hsd-1": (("hwang_shih_decani", -1.0), ("hwang_shih_decani", -1.0)),
    "hsd0": (("hwang_shih_decani", 0.0), ("hwang_shih_decani", 0.0)),
    "obf|hsd-1": (("obrien_fleming", None), ("hwang_shih_decani", -1.0)),
    "hsd-1|obf": (("hwang_shih_decani", -1.0), ("obrien_fleming", None)),
    "obf+": (("obrien_fleming", None), ("obrien_fleming", None)),
    "hsd-3+": (("hwang_shih_decani", -3.0), ("hwang_shih_decani", -3.0)),
    "hsd-2+": (("hwang_shih_decani", -2.0), ("hwang_shih_decani", -2.0)),
}
"""Design → (spending of the PASS side, of the FAIL side); None: one look at 16 (fixed) or α at every look
(naive). ``a|b``: PASS spends ``a``, FAIL spends ``b`` (asymmetric). ``+``: a side spends nothing at a look where
even a perfect look (every trial passing, or every trial failing) could not decide it (suite means only:
``Sequential.spend_at = "decidable_looks"``)."""
TABLE = ("fixed", "naive", "obf", "obf+", "hsd-3+", "hsd-2+", "pocock")
"""The designs tabulated by default (``--designs`` picks others)."""
Bounds = Callable[[np.ndarray, int, np.ndarray], tuple[np.ndarray, np.ndarray]]
"""(columns, trials per case at the look, level per column) → (lower, upper) one-sided bounds."""


def by_level(levels: np.ndarray, bounds: Callable[[np.ndarray, float], tuple[np.ndarray, np.ndarray]]
             ) -> tuple[np.ndarray, np.ndarray]:
    """Call ``bounds(columns, level)`` once per distinct level (levels sit on a grid: a few dozen)."""
    low, high = np.empty(levels.size), np.empty(levels.size)
    for level in np.unique(levels):
        cols = np.flatnonzero(levels == level)
        if level <= 0:  # nothing spent at this look: it cannot decide
            low[cols], high[cols] = -np.inf, np.inf
            continue
        low[cols], high[cols] = bounds(cols, float(level))
    return low, high


class Setting:
    """One population × cases × rule: the trials of every replication, and the rule's bounds at any look."""

    def __init__(self, population: str, cases: int, rule: str, reps: int, seed: int) -> None:
        rng = np.random.default_rng(seed)
        draw = POPULATIONS[population]
        self.population, self.cases, self.rule, self.reps = population, cases, rule, reps
        self.truth = truth(draw, 1, "hat")
        self.p = draw(rng, cases * reps).reshape(cases, reps)
        self.u = rng.random((cases, reps, LOOKS[-1]))  # the same uniforms decide every scenario's trials
        self.scenarios: dict[str, tuple[float, float]] | None = None
        if rule == "non_inferior":
            self.base = rng.binomial(LOOKS[-1], self.p) / LOOKS[-1]

    def column(self, r: int) -> Setting:
        """Replication ``r`` alone: bootstrap resamples are drawn per call over the columns' distinct units, so
        only a one-column call draws exactly what a single run's gate draws."""
        one = copy.copy(self)
        one.reps, one.p, one.u = 1, self.p[:, [r]], self.u[:, [r]]
        if self.rule == "non_inferior":
            one.base = self.base[:, [r]]
        return one

    def trials(self, drop: float) -> np.ndarray:
        """Cumulative passes per case at each trial (cases × reps × 16), pass rates scaled down by ``drop``."""
        p = self.p * (1 - drop / self.truth) if drop else self.p
        return np.cumsum(self.u < p[..., None], axis=2)

    def bounds(self, passes: np.ndarray, n: int, cols: np.ndarray, level: float) -> tuple[np.ndarray, np.ndarray]:
        values = passes[:, cols, n - 1] / n
        conf = 1 - 2 * level
        if self.rule == "pass_hat_k":
            ivs = suite_intervals(values, None, seed=0, confidence=conf)
            est = values.mean(axis=0)
            return (np.minimum([iv.low for iv in ivs], est), np.maximum([iv.high for iv in ivs], est))
        res = paired_differences(self.base[:, cols], values, None, confidence=conf, binary=[False] * cols.size, seed=0)
        return np.array([r.low for r in res]), np.array([r.high for r in res])

    def variance(self, passes: np.ndarray, n: int, cols: np.ndarray) -> np.ndarray:
        values = passes[:, cols, n - 1] / n
        if self.rule == "non_inferior":
            values = values - self.base[:, cols]
        return values.var(axis=0, ddof=1) / self.cases


def shipped(rule: str) -> str:
    """The design ``--sequential`` uses (``Sequential()``'s spending and ``spend_at``), the same for every rule."""
    default = Sequential()
    spec = (default.spending, default.gamma)
    plus = "+" if default.spend_at == "decidable_looks" else ""
    return next(name for name, sides in DESIGNS.items() if sides == (spec, spec) and name.endswith(plus)
                and (plus or not name.endswith("+")))


def live_looks(s: Setting, bar: float, design: str) -> list[tuple[bool, bool]]:
    """Per look: whether the PASS side and the FAIL side can decide there at all (see :data:`DESIGNS`).

    A look where a perfect look could not decide at the most the look can test at, its cumulative α(τ_k),
    spends nothing on that side (data-independent: it depends on the cases, the bar and α only)."""
    sides = DESIGNS[design]
    if not design.endswith("+") or s.rule != "pass_hat_k" or sides is None:
        return [(True, True)] * len(LOOKS)
    one = s.column(0)
    out = []
    for n in LOOKS:
        pair = []
        for side, (kind, gamma) in enumerate(sides):
            level = spent(kind, ALPHA, n / LOOKS[-1], gamma)
            perfect = np.cumsum(np.full((s.cases, 1, LOOKS[-1]), side == 0, dtype=float), axis=2)
            low, high = one.bounds(perfect, n, np.array([0]), level)
            pair.append(bool(low[0] >= bar) if side == 0 else bool(high[0] < bar))
        out.append((pair[0], pair[1]))
    return out


def run_design(s: Setting, passes: np.ndarray, bar: float, design: str) -> tuple[np.ndarray, np.ndarray]:
    """(+1 PASS / −1 FAIL / 0 undecided, trials per case used) per replication."""
    sides = DESIGNS[design]
    seqs = None if sides is None else [Sequential(LOOKS, kind, gamma) for kind, gamma in sides]
    looks = [len(LOOKS) - 1] if design == "fixed" else list(range(len(LOOKS)))
    live = live_looks(s, bar, design)
    decision, used = np.zeros(s.reps, dtype=int), np.full(s.reps, LOOKS[-1])
    history: list[np.ndarray] = []
    strict = s.rule == "non_inferior"  # non_inferior PASSes when low > −margin, pass_hat_k when low ≥ bar
    for j in looks:
        n = LOOKS[j]
        history.append(s.variance(passes, n, np.arange(s.reps)))
        active = np.flatnonzero(decision == 0)
        if active.size == 0:
            break
        side_levels = []
        for side in range(2):
            if seqs is None:
                side_levels.append(np.full(active.size, ALPHA))
                continue
            at = [i for i in range(j + 1) if live[i][side]]
            side_levels.append(np.zeros(active.size) if not live[j][side] else np.array(
                [seqs[side].levels(ALPHA, at, [float(history[i][c]) for i in at])[-1] for c in active]))

        def bounds(levels: np.ndarray, n: int = n, act: np.ndarray = active) -> tuple[np.ndarray, np.ndarray]:
            return by_level(levels, lambda cols, level: s.bounds(passes, n, act[cols], level))

        low, high = bounds(side_levels[0])
        if not np.array_equal(side_levels[0], side_levels[1]):
            high = bounds(side_levels[1])[1]
        passed = (low > bar) if strict else (low >= bar)
        failed = high < bar
        decision[active[passed]], used[active[passed | failed]] = 1, n
        decision[active[failed & ~passed]] = -1
    return decision, used


def floor_table(settings: list[Setting], reps: int) -> None:
    """Per setting and PASS scenario: the bar, and the lower bound a look could reach at best (every trial of
    every case passing, tested at the most the spending lets the look use, its cumulative α(τ_k)), per look
    and spending; and the level a perfect look needs to PASS (an α spent before the last look, whatever the
    spending function)."""
    print("\nBest possible lower bound at each look (every trial passing; level = cumulative α(τ_k), the most a"
          " look can test at):")
    print(f"{'rule':<13} {'population':<10} {'T':>3} {'bar':>14} {'spending':<9} {'α(τ) at looks':>26} "
          f"{'all-pass lower bound':>22}  {'α a perfect look needs':>22}")
    for s in settings:
        bars = scenarios(s, reps)
        need = f"{needed_level(s, bars['pass'][0])}/{needed_level(s, bars['pass95'][0])}"
        bar_text = f"{bars['pass'][0]:.3f}/{bars['pass95'][0]:.3f}"
        for name in ("obf", "hsd-2", "pocock"):
            sides = DESIGNS[name]
            assert sides is not None
            kind, gamma = sides[0]
            cumulative = [spent(kind, ALPHA, n / LOOKS[-1], gamma) for n in LOOKS]
            lows = [perfect_low(s, a, n) for a, n in zip(cumulative, LOOKS, strict=True)]
            print(f"{s.rule:<13} {s.population:<10} {s.cases:>3} {bar_text:>14} {name:<9} "
                  f"{' '.join(f'{a:8.2g}' for a in cumulative):>26} {' '.join(f'{x:+.3f}' for x in lows):>22}  "
                  f"{need:>22}", flush=True)


def adaptive_table(settings: list[Setting], reps: int) -> None:
    """Issue 22 item 4, simulated: after look 1 only the cases that can still move go on.

    A case that passed (or failed) all of look 1's trials is taken as settled and runs no more; its value stays
    what look 1 saw, in the estimate, the interval (Gaffke over cases, the suite's interval) and the
    boundaries' variances alike. The rest run to the look the gate stops at. Errors at the margin first: a
    design whose false PASS or false FAIL exceeds α + 2 Monte-Carlo errors is not shipped.
    """
    print("\nItem 4: after look 1, trials only for cases not all-pass or all-fail at look 1 (shipped spending):")
    print(f"{'rule':<13} {'population':<10} {'T':>3} {'scenario':<8} {'design':<7} {'PASS':>11} {'FAIL':>11} "
          f"{'right − fixed':>14} {'trials':>6}")
    design = shipped("pass_hat_k")
    first = LOOKS[0]
    for s in settings:
        if s.rule != "pass_hat_k":
            continue
        for scenario in ("margin", "pass95", "fail95"):
            bar, drop = scenarios(s, reps)[scenario]
            passes = s.trials(drop)
            at_first = passes[:, :, first - 1]
            solved, hopeless = at_first == first, at_first == 0
            adapted = passes.copy()
            later = np.arange(first + 1, LOOKS[-1] + 1, dtype=adapted.dtype)
            adapted[solved, first:] = later  # every later trial "passes": the value stays 1
            adapted[hopeless, first:] = 0
            right = -1 if scenario.startswith("fail") else 1
            fixed = (run_design(s, passes, bar, "fixed")[0] == right).astype(float)
            for label, data in ((design, passes), (design + "adapt", adapted)):
                decision, used = run_design(s, data, bar, design)
                if data is adapted:
                    still = s.cases - (solved | hopeless).sum(axis=0)
                    used = (first * (s.cases - still) + used * still) / s.cases
                diff = (decision == right).astype(float) - fixed
                print(f"{s.rule:<13} {s.population:<10} {s.cases:>3} {scenario:<8} {label:<7} "
                      f"{mc(float(np.mean(decision == 1)), s.reps):>11} {mc(float(np.mean(decision == -1)), s.reps):>11} "
                      f"{np.mean(diff):>+8.3f}±{np.std(diff) / math.sqrt(s.reps):.3f} {np.mean(used) / LOOKS[-1]:>6.2f}",
                      flush=True)


@dataclass(frozen=True)
class Row:
    """One design on one setting and scenario, as the big table prints it."""

    design: str
    population: str
    scenario: str
    passed: float
    failed: float
    diff: float
    """Rate of the right decision minus the fixed design's, on the same suites."""
    diff_se: float
    trials: float
    """Mean trials per case over the fixed design's."""
    reps: int


def trade_off(rows: list[Row], designs: list[str]) -> None:
    """Per design, what the issue asks of it: power against the fixed design (rows more than 2 Monte-Carlo
    errors below it, and the worst), errors at the margin against α (+ 2 errors), and trials."""
    print("\nTrade-off per design (alternative rows below fixed by > 2 MC errors; worst margin error; trials):")
    print(f"{'design':<9} {'below fixed':>12} {'worst':>7} {'margin error':>12} {'over α':>6} "
          f"{'realistic 80 %':>14} {'realistic 95 %':>14} {'strong PASS':>11} {'strong FAIL':>11}")

    def span(mine: list[Row], population: str, scenarios: tuple[str, ...]) -> str:
        values = [r.trials for r in mine if r.population == population and r.scenario in scenarios]
        return f"{min(values):.2f}–{max(values):.2f}" if values else "—"

    for design in designs:
        mine = [r for r in rows if r.design == design]
        power = [r for r in mine if r.scenario != "margin"]
        below = [r for r in power if r.diff < -2 * r.diff_se]
        margin = [r for r in mine if r.scenario == "margin"]
        worst_error = max((max(r.passed, r.failed) for r in margin), default=0.0)
        over = sum(max(r.passed, r.failed) > ALPHA + 2 * math.sqrt(ALPHA * (1 - ALPHA) / r.reps) for r in margin)
        worst = min((r.diff for r in power), default=0.0)
        print(f"{design:<9} {f'{len(below)}/{len(power)}':>12} {worst:>+7.3f} {worst_error:>12.3f} {over:>6} "
              f"{span(mine, 'realistic', ('pass', 'fail')):>14} {span(mine, 'realistic', ('pass95', 'fail95')):>14} "
              f"{span(mine, 'strong', ('pass', 'pass95')):>11} {span(mine, 'strong', ('fail', 'fail95')):>11}")


PRICE_DESIGNS: tuple[tuple[str, str, Spending, float | None], ...] = (
    ("obf", "trials", "obrien_fleming", None), ("hsd-3", "trials", "hwang_shih_decani", -3.0),
    ("pocock", "trials", "pocock", None), ("obf", "information", "obrien_fleming", None),
    ("hsd-3", "information", "hwang_shih_decani", -3.0))
"""Designs of the price table: spending function, and the time scale it is spent on (the trial fraction,
as ``--sequential`` does, or the information fraction)."""


def information_fractions(population: str, rule: str) -> tuple[float, ...]:
    """Information at each look over the last look's, for the population's planted per-case pass rates.

    A suite mean over T cases at n trials per case has variance (Var(p) + E[p(1 − p)]/n)/T: the spread
    between cases does not shrink with trials, so most of the information is there at look 1 when cases
    differ a lot. For ``non_inferior`` (the bench's candidate scaled from its 16-trial baseline, nearly no
    spread in the differences at the margin) it is E[p(1 − p)](1/n + 1/16)/T.
    """
    p = POPULATIONS[population](np.random.default_rng(99), 2_000_000)
    between, within = float(np.var(p)), float(np.mean(p * (1 - p)))
    if rule == "non_inferior":
        var = [within * (1 / n + 1 / LOOKS[-1]) for n in LOOKS]
    else:
        var = [between + within / n for n in LOOKS]
    return tuple(var[-1] / v for v in var)


def price_table(draws: int = 1_000_000) -> None:
    """What stopping early costs in the canonical model, where the fixed test is the most powerful one.

    Z_k = (Brownian motion with drift θ at information I_k)/√I_k, one-sided level α per decision; θ is set so
    that the fixed design (one look at 16 trials) has power 0.80 or 0.95. By the Neyman–Pearson lemma the
    fixed one-sided z-test is the most powerful level-α test on the data of 16 trials per case, and a design
    that may stop early decides on a part of that data, so its power is at most the fixed design's, and
    below it whenever it stops with positive probability. The table shows how much below, and what it buys
    (mean trials, PASS side only), per spending function and time scale, at the populations' information
    fractions: the frontier any spending faces, independent of passhat's intervals.
    """
    print(f"\nWhat stopping early costs, canonical normal model ({draws:,} draws per row, Monte-Carlo error"
          " ≤ 0.0004): power (fixed: 0.80 / 0.95) and mean trials over 16, PASS side:")
    print(f"{'rule':<13} {'population':<10} {'I_k / I_16':>17} {'design':<7} {'scale':<11} "
          f"{'power 80 %':>10} {'trials':>6} {'power 95 %':>10} {'trials':>6}")
    rng = np.random.default_rng(2026)
    noise = rng.standard_normal((len(LOOKS), draws))
    fractions = np.array([n / LOOKS[-1] for n in LOOKS])
    for rule in ("pass_hat_k", "non_inferior"):
        for population in POPULATIONS:
            info = np.array(information_fractions(population, rule))
            steps = np.diff(np.concatenate(([0.0], info)))
            for name, scale, kind, gamma in PRICE_DESIGNS:
                times = fractions if scale == "trials" else info
                cumulative = [spent(kind, ALPHA, float(t), gamma) for t in times]
                increments = [cumulative[0], *np.diff(cumulative)]
                c = np.array(upper_boundaries(increments, tuple(float(i) for i in info)))
                cells = []
                for power in (0.80, 0.95):
                    theta = float(ndtri(1 - ALPHA)) + float(ndtri(power))
                    z = np.cumsum(noise * np.sqrt(steps)[:, None] + theta * steps[:, None], axis=0) / np.sqrt(info)[:, None]
                    cross = z >= c[:, None]
                    stop = np.where(cross.any(axis=0), cross.argmax(axis=0), len(LOOKS) - 1)
                    cells.append(f"{np.mean(cross.any(axis=0)):>10.4f} {np.mean(fractions[stop]):>6.3f}")
                print(f"{rule:<13} {population:<10} {' '.join(f'{i:.3f}' for i in info):>17} {name:<7} {scale:<11} "
                      f"{' '.join(cells)}", flush=True)


def perfect_low(s: Setting, level: float, n: int) -> float:
    """The lower bound of a look at ``n`` trials per case where every trial passed, at ``level``."""
    perfect = np.cumsum(np.ones((s.cases, 1, LOOKS[-1])), axis=2)
    return float(s.column(0).bounds(perfect, n, np.array([0]), level)[0][0])


def needed_level(s: Setting, bar: float) -> str:
    """The least level at which a perfect look PASSes ``bar`` (the same at every look: the values are all 1)."""
    def crosses(level: float) -> float:
        low = perfect_low(s, level, LOOKS[0])
        return float(low > bar if s.rule == "non_inferior" else low >= bar)

    level = bisect(crosses, ALPHA, 0.5, steps=14)
    return f">{ALPHA:g}" if level >= ALPHA else f"{level:.3g}" if level > ALPHA / 2**13 else "≈0"


def scenarios(s: Setting, reps: int) -> dict[str, tuple[float, float]]:
    """Scenario → (bar, candidate drop): the margin, and alternatives the fixed design detects 80 % of the time."""
    if s.scenarios is None:
        s.scenarios = _scenarios(s, reps)
    return s.scenarios


def _scenarios(s: Setting, reps: int) -> dict[str, tuple[float, float]]:
    pilot = Setting(s.population, s.cases, s.rule, min(reps, 600), seed=7)
    unchanged = pilot.trials(0.0)

    def power(bar: float, drop: float, outcome: int) -> float:
        passes = unchanged if drop == 0 else pilot.trials(drop)
        return float(np.mean(run_design(pilot, passes, bar, "fixed")[0] == outcome))

    out: dict[str, tuple[float, float]] = {}
    if s.rule == "pass_hat_k":
        out["margin"] = (s.truth, 0.0)
        for target, name in ((0.8, ""), (0.95, "95")):
            below = bisect(lambda g, t=target: power(s.truth - g, 0.0, 1) - t + 0.8, s.truth)
            above = bisect(lambda g, t=target: power(s.truth + g, 0.0, -1) - t + 0.8, 1 - s.truth)
            out[f"pass{name}"], out[f"fail{name}"] = (s.truth - below, 0.0), (s.truth + above, 0.0)
        return out
    margin = bisect(lambda m: power(-m, 0.0, 1), 0.5 * s.truth)
    out["margin"], out["pass"] = (-margin, margin), (-margin, 0.0)
    out["fail"] = (-margin, margin + bisect(lambda extra: power(-margin, margin + extra, -1), 0.9 * s.truth - margin))
    wide = bisect(lambda m: power(-m, 0.0, 1) - 0.15, 0.5 * s.truth)  # the margin the fixed design passes 95 %
    out["pass95"] = (-wide, 0.0)
    out["fail95"] = (-margin, margin + bisect(lambda extra: power(-margin, margin + extra, -1) - 0.15,
                                              0.9 * s.truth - margin))
    return out


def bisect(rate: Callable[[float], float], top: float, target: float = 0.8, steps: int = 12) -> float:
    """The smallest x in (0, top] with rate(x) ≥ target (rate grows with x; common random numbers keep it so)."""
    lo, hi = 0.0, top
    if rate(hi) < target:
        return hi
    for _ in range(steps):
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if rate(mid) >= target else (mid, hi)
    return hi


def mc(p: float, reps: int) -> str:
    return f"{p:.3f}±{math.sqrt(max(p * (1 - p), 1e-12) / reps):.3f}"


def in_memory(passes: np.ndarray, trials: int, name: str) -> LoadedRun:
    tallies = {f"c{i:03d}": CaseTally(f"c{i:03d}", passes=int(c), fails=trials - int(c)) for i, c in enumerate(passes)}
    manifest = {"suite": {"name": "s", "hash": "h", "cases": dict.fromkeys(tallies, "x"),
                          "case_meta": {cid: {"tags": {}, "group": None} for cid in tallies}},
                "agent": name, "trials": trials, "seed": 0, "status": "complete"}
    return LoadedRun(Path(name), Manifest.model_validate(manifest), tallies)


def cross_check(s: Setting, bar: float, drop: float, count: int) -> tuple[int, int]:
    """Replications where ``evaluate_looks`` (the shipped code) reaches the bench's decision at the same look."""
    passes = s.trials(drop)
    rule = ({"pass_hat_k": {"k": 1, "min": bar}} if s.rule == "pass_hat_k"
            else {"non_inferior": {"metric": "pass_hat_k", "k": 1, "margin": -bar}})
    gate = GateFile.model_validate({"alpha": ALPHA, "rules": [rule]})
    design, agree = Sequential(LOOKS), 0
    for r in range(count):
        views = [in_memory(passes[:, r, n - 1], n, "cand") for n in LOOKS]
        base = in_memory(np.rint(s.base[:, r] * LOOKS[-1]), LOOKS[-1], "base") if s.rule == "non_inferior" else None
        matching = match_cases(base, views[0], allow_changed_cases=False) if base is not None else None
        got = evaluate_looks(gate, design, views, base, matching, Path("."), "gate.yaml", finished=True)
        outcome = {"PASS": 1, "FAIL": -1}.get(got.results[0].outcome, 0)
        one = s.column(r)
        decision, used = run_design(one, passes[:, [r], :], bar, shipped(s.rule))
        agree += outcome == decision[0] and got.looks[-1].trials == used[0]
    return agree, count


def coverage(s: Setting, reps: int) -> dict[str, float]:
    """At the look the shipped design stopped (pass^1 bar at the 95 % alternative): interval coverage and bias."""
    bar, _ = scenarios(s, reps)["pass95"]
    passes = s.trials(0.0)
    _, used = run_design(s, passes, bar, shipped(s.rule))
    design = Sequential(LOOKS)
    out = {"rci": 0.0, "plain": 0.0, "bias": 0.0, "width_rci": 0.0, "width_plain": 0.0}
    for j, n in enumerate(LOOKS):
        cols = np.flatnonzero(used == n)
        if not cols.size:
            continue
        values = passes[:, cols, n - 1] / n
        for key, conf in (("rci", design.confidence(j)), ("plain", 0.95)):
            ivs = suite_intervals(values, None, seed=0, confidence=conf)
            low, high = np.array([iv.low for iv in ivs]), np.array([iv.high for iv in ivs])
            out[key] += float(np.sum((low <= s.truth) & (s.truth <= high))) / s.reps
            out[f"width_{key}"] += float(np.sum(high - low)) / s.reps
        out["bias"] += float(np.sum(values.mean(axis=0) - s.truth)) / s.reps
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=1000)
    parser.add_argument("--check", type=int, default=150, help="replications checked against evaluate_looks")
    parser.add_argument("--adaptive", action="store_true", help="only the item-4 table (trials to undecided cases)")
    parser.add_argument("--price", action="store_true", help="only the table of what stopping early costs")
    parser.add_argument("--designs", default=",".join(TABLE), help=f"designs to tabulate, comma-separated, of: "
                        f"{', '.join(DESIGNS)}")
    args = parser.parse_args()
    designs = ["fixed", *(d for d in args.designs.split(",") if d != "fixed")]
    unknown = [d for d in designs if d not in DESIGNS]
    if unknown:
        parser.error(f"--designs: unknown {unknown}; known: {', '.join(DESIGNS)}")
    start = time.process_time()
    settings = [Setting(pop, cases, rule, args.reps, seed=100 + i) for i, (pop, cases, rule) in enumerate(
        (p, t, r) for r in ("pass_hat_k", "non_inferior") for p in POPULATIONS for t in (20, 60))]

    print(f"{args.reps} replications per row, looks {LOOKS}, α = {ALPHA} one-sided per decision\n")
    if args.price:
        price_table()
        print(f"\n{time.process_time() - start:.0f} s of CPU")
        return
    if args.adaptive:
        adaptive_table(settings, args.reps)
        print(f"\n{time.process_time() - start:.0f} s of CPU")
        return
    print("Bench against the shipped code (gate.looks.evaluate_looks): same decision at the same look")
    for s in settings[:1] + settings[2:3] + settings[4:5]:
        for scenario in ("margin", "pass"):
            bar, drop = scenarios(s, args.reps)[scenario]
            agree, count = cross_check(s, bar, drop, args.check)
            print(f"  {s.rule:<13} {s.population:<9} T={s.cases:<3} {scenario:<7} {agree}/{count}")

    header = (f"\n{'rule':<13} {'population':<10} {'T':>3} {'scenario':<8} {'design':<7} {'PASS':>11} {'FAIL':>11} "
              f"{'right − fixed':>14} {'trials':>6}")
    print(header)
    print("-" * (len(header) - 1))
    rows: list[Row] = []
    for s in settings:
        for scenario, (bar, drop) in scenarios(s, args.reps).items():
            passes = s.trials(drop)
            right = -1 if scenario.startswith("fail") else 1  # at the margin: the PASS rate
            fixed = None
            for design in designs:
                decision, used = run_design(s, passes, bar, design)
                hit = (decision == right).astype(float)
                fixed = hit if fixed is None else fixed
                diff = hit - fixed
                rows.append(Row(design, s.population, scenario, float(np.mean(decision == 1)),
                                float(np.mean(decision == -1)), float(np.mean(diff)),
                                float(np.std(diff) / math.sqrt(s.reps)), float(np.mean(used) / LOOKS[-1]), s.reps))
                label = design + ("*" if design == shipped(s.rule) else "")
                print(f"{s.rule:<13} {s.population:<10} {s.cases:>3} {scenario:<8} {label:<7} "
                      f"{mc(float(np.mean(decision == 1)), s.reps):>11} {mc(float(np.mean(decision == -1)), s.reps):>11} "
                      f"{np.mean(diff):>+8.3f}±{np.std(diff) / math.sqrt(s.reps):.3f} {np.mean(used) / LOOKS[-1]:>6.2f}",
                      flush=True)
    trade_off(rows, designs)
    floor_table(settings, args.reps)
    price_table()
    print("\nSummary interval at the stopping look (shipped design, pass^1, bar at the 95 % alternative), nominal 0.95:")
    print(f"{'population':<10} {'T':>3} {'RCI cover':>11} {'plain cover':>11} {'RCI width':>9} {'plain width':>11} "
          f"{'bias':>7}")
    for s in settings[:4]:
        c = coverage(s, args.reps)
        print(f"{s.population:<10} {s.cases:>3} {mc(c['rci'], s.reps):>11} {mc(c['plain'], s.reps):>11} "
              f"{c['width_rci']:>9.3f} {c['width_plain']:>11.3f} {c['bias']:>+7.4f}")
    print(f"\n{time.process_time() - start:.0f} s of CPU")


if __name__ == "__main__":
    main()
