"""A sequential design: the looks (trials per case at which the gate is evaluated) and how α is spent.

``passhat run --gate FILE --sequential --looks 4,8,16`` runs every case to 4 trials, evaluates the gate,
and goes on to 8 and 16 only while a rule is undecided. Each look tests at a *nominal* level below α so
that, over all the looks, a decision's error is still α (``spending``). Design note 027 has the choice and
``bench/bench_sequential.py`` the simulation behind it:

- **Spending on the trial scale.** τ_k = n_k / n_max, fixed before the first trial (Lan & DeMets 1983 allow
  any pre-set time scale; calendar time is the classic one). An *information* fraction would need the
  variance the run will have at n_max, which a look can only project from its own data: how much α a look
  spends would then move with the data it tests.
- **O'Brien–Fleming-type spending**, 2 − 2Φ(z_{1−α/2}/√τ): almost nothing at the first looks, so the last
  look is tested at nearly α and the gate keeps the fixed design's power; the savings come from suites
  whose evidence is clear by the middle look. Pocock-type spending, α·ln(1 + (e − 1)τ), saves far more
  trials where the cases, not the trials, carry the evidence (a third to a half of them on a τ-bench-like
  population, at the same power) but costs power where trial noise dominates: near the ceiling and in
  paired comparisons (up to 36 points at 20 cases). Hwang–Shih–DeCani spending with γ between them (−3,
  −2) cuts trials on suite means at the fixed design's power but still costs paired rules 1–4 points
  (design note 033). ``Sequential(spending="pocock")`` and ``"hwang_shih_decani"`` exist for simulations
  (``bench/bench_sequential.py``); a run refuses them.
- **A side that cannot decide spends nothing** (``spend_at="decidable_looks"``, design note 033): near the
  ceiling with few cases a perfect look cannot PASS before the last look at any spending O'Brien–Fleming
  allows there (the bound over cases tops out at about α^{1/cases}); the α those looks would spend is
  given to the last one instead. Runs recorded before it (``every_look``) replay as they were decided.
- **Boundaries from the looks' correlation**, estimated from the per-case values (``information``); where
  it cannot be (no spread, a rule that is not a mean over cases) the correlation of independent trials,
  √(n_i/n_k), which is the lowest it can be and so the conservative choice.

Nothing here knows about gates or runs: numbers and a small record for the manifest.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from passhat.errors import PasshatError
from passhat.models.manifest import SequentialDesign
from passhat.sequential.spending import Spending, nominal_levels, spent, upper_boundaries

SpendAt = Literal["every_look", "decidable_looks"]
"""Where a side of a rule spends α: at every look it is tested (the design of runs recorded before design
note 033), or only at the looks where a perfect look could decide it (``gate.looks``)."""

SPENDING: Spending = "obrien_fleming"
"""The spending function of a sequential run's gate (design note 027): it keeps almost all of α for the
last look, so a gate is as likely to decide right as the fixed design at the same maximum."""
INTERVAL_SPENDING: Spending = "pocock"
"""The spending function of the summary's repeated confidence intervals: spread evenly over the looks, so an
early stop is not reported with a 99.99 % interval (any spending function keeps them valid together)."""
DEFAULT_LOOKS = (4, 8, 16)
"""Looks when none are given: the issue's design, pass^4 measurable at the first look."""
INFORMATION_STEP = 0.01
"""Information ratios are rounded up to this grid (and kept this far apart): the estimated correlation
between looks is rounded *down*, the conservative direction, and boundaries are computed once per grid
point instead of once per evaluation."""


@dataclass(frozen=True)
class Sequential:
    """Looks of a sequential run: trials per case at each look, increasing; the last is the maximum."""

    looks: tuple[int, ...] = DEFAULT_LOOKS
    """Trials per case at which the gate is evaluated, e.g. (4, 8, 16)."""
    spending: Spending = SPENDING
    """How a gate's α is spent across the looks (Lan–DeMets, on the trial scale n_k/n_max)."""
    gamma: float | None = None
    """The parameter of ``hwang_shih_decani`` spending (None for the others)."""
    spend_at: SpendAt = "decidable_looks"
    """``decidable_looks``: a side of a rule that even a perfect look could not decide spends nothing there
    (design note 033); ``every_look`` is how runs recorded before it spend, and resume."""

    def __post_init__(self) -> None:
        try:
            spent(self.spending, 0.05, 0.5, self.gamma)
        except ValueError as exc:
            raise PasshatError(f"sequential design: {exc}") from None
        looks = tuple(self.looks)
        if len(looks) < 2:
            raise PasshatError(f"--looks: a sequential run needs at least two looks, got {list(looks)} "
                               "(one look is a fixed design: run it without --sequential)")
        if any(not isinstance(n, int) or isinstance(n, bool) or n < 1 for n in looks):
            raise PasshatError(f"--looks: each look is a number of trials per case ≥ 1, got {list(looks)}")
        if any(b <= a for a, b in zip(looks, looks[1:], strict=False)):
            raise PasshatError(f"--looks must increase, got {','.join(map(str, looks))}")
        object.__setattr__(self, "looks", looks)

    @property
    def max_trials(self) -> int:
        """Trials per case at the last look: what the fixed design would run."""
        return self.looks[-1]

    def spent(self, alpha: float, look: int) -> float:
        """The α spent by look ``look`` (an index): the most that look's test can be run at, at any correlation
        (its chance of crossing is at most the chance of crossing at it or before)."""
        tau = 1.0 if look == len(self.looks) - 1 else self.fractions[look]
        return spent(self.spending, alpha, tau, self.gamma)

    @property
    def fractions(self) -> tuple[float, ...]:
        """τ_k = n_k / n_max, the time scale α is spent on."""
        return tuple(n / self.max_trials for n in self.looks)

    def record(self) -> SequentialDesign:
        """The design as the manifest records it (``manifest.sequential.design``)."""
        return SequentialDesign(looks=list(self.looks), spending=self.spending, gamma=self.gamma, time_scale="trials",
                                spend_at=self.spend_at)

    @classmethod
    def from_record(cls, recorded: SequentialDesign) -> Sequential:
        """The design a manifest recorded."""
        return cls(tuple(recorded.looks), recorded.spending, recorded.gamma, recorded.spend_at)

    @classmethod
    def parse(cls, looks: str | Sequence[int] | None, max_trials: int | None) -> Sequential:
        """``--looks 4,8,16`` and ``--max-trials N`` as a design: the maximum is always the last look.

        Without ``looks`` the looks are N/4, N/2 and N (4, 8, 16 for the default N = 16); with both, a look
        beyond N is bad input and N is added as the last look when the list stops short of it.
        """
        if looks is None:
            top = DEFAULT_LOOKS[-1] if max_trials is None else max_trials
            chosen = sorted({max(1, top // 4), max(1, top // 2), top})
            if len(chosen) < 2:
                raise PasshatError(f"--max-trials {top}: a sequential run needs at least 2 trials per case")
            return cls(tuple(chosen))
        if isinstance(looks, str):
            try:
                parsed = [int(x) for x in looks.replace(" ", "").split(",") if x]
            except ValueError:
                raise PasshatError(f"--looks {looks!r}: expected trials per case separated by commas, "
                                   "e.g. 4,8,16") from None
        else:
            parsed = list(looks)
        if max_trials is not None:
            beyond = [n for n in parsed if n > max_trials]
            if beyond:
                raise PasshatError(f"--looks {','.join(map(str, parsed))}: look(s) {beyond} are beyond "
                                   f"--max-trials {max_trials}")
            if not parsed or parsed[-1] < max_trials:
                parsed.append(max_trials)
        return cls(tuple(parsed))

    def levels(self, alpha: float, looks: Sequence[int], variances: Sequence[float] | None = None, *,
               spending: Spending | None = None) -> list[float]:
        """The nominal one-sided level of each of ``looks`` (indices into :attr:`looks`) for a test of size ``alpha``.

        ``variances``: the variance of the rule's estimate at each of those looks (its information is the
        inverse), or None for the correlation of independent trials. α is spent at τ of the looks given: a
        look where a rule could not be tested spends nothing, and the next one catches up.
        """
        tau = [self.fractions[j] for j in looks]
        if looks and looks[-1] == len(self.looks) - 1:
            tau[-1] = 1.0
        gamma = self.gamma if spending is None else None
        cumulative = [spent(spending or self.spending, alpha, t, gamma) for t in tau]
        increments = [cumulative[0], *(b - a for a, b in zip(cumulative, cumulative[1:], strict=False))]
        return nominal_levels(upper_boundaries(increments, information(
            [self.looks[j] for j in looks], variances)))

    def confidence(self, look: int, confidence: float = 0.95) -> float:
        """Two-sided confidence of the repeated confidence interval at look ``look`` (an index).

        Each side spends (1 − confidence)/2 across the looks with the correlation of independent trials
        (the lowest the looks can have, so the conservative one for every k at once): the intervals then
        cover together at every look, and so at whichever look the run stopped (Jennison & Turnbull 2000,
        ch. 9, repeated confidence intervals).
        """
        alpha = (1 - confidence) / 2
        return 1 - 2 * self.levels(alpha, list(range(look + 1)), spending=INTERVAL_SPENDING)[-1]


def information(trials: Sequence[int], variances: Sequence[float] | None) -> tuple[float, ...]:
    """Information at each look relative to the first, on the :data:`INFORMATION_STEP` grid.

    From the variances of the estimate when they are all positive and finite (information = 1/variance),
    else from the trials (information grows like n: independent trials, the lowest correlation). Ratios are
    rounded up and kept a step apart, which lowers every estimated correlation a little: conservative.
    """
    if variances is not None and len(variances) == len(trials) and all(
            math.isfinite(v) and v > 0 for v in variances):
        raw = [variances[0] / v for v in variances]
    else:
        raw = [n / trials[0] for n in trials]
    out: list[float] = []
    for r in raw:
        step = math.ceil(r / INFORMATION_STEP - 1e-9) * INFORMATION_STEP
        out.append(round(max(step, out[-1] + INFORMATION_STEP) if out else 1.0, 6))
    return tuple(out)
