"""Agreement between the judge and people on binary pass/fail labels (statistics.md §6).

Hand-coded because they are a few lines each and the libraries that have them (scikit-learn,
irrCAC) would be heavy or pin old scipy; each is checked in the tests against the kappa-paradox
example of §6: 100 items, both pass 90, both fail 2, 4 + 4 disagreements → p_o = 0.92, κ = 0.291,
AC1 = 0.910. Labels are "pass" = True. Undefined values (no items, chance agreement of 1) are ``None``,
never a number that would let a gate pass.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Confusion:
    """Judge vs human, with "pass" as the positive class."""

    both_pass: int
    judge_pass_human_fail: int
    judge_fail_human_pass: int
    both_fail: int

    @classmethod
    def of(cls, human: Sequence[bool], judge: Sequence[bool]) -> Confusion:
        if len(human) != len(judge):
            raise ValueError(f"need paired labels, got {len(human)} human and {len(judge)} judge labels")
        pairs = list(zip(human, judge, strict=True))
        return cls(
            both_pass=sum(h and j for h, j in pairs),
            judge_pass_human_fail=sum(j and not h for h, j in pairs),
            judge_fail_human_pass=sum(h and not j for h, j in pairs),
            both_fail=sum(not h and not j for h, j in pairs),
        )

    @property
    def n(self) -> int:
        return self.both_pass + self.judge_pass_human_fail + self.judge_fail_human_pass + self.both_fail

    @property
    def agreements(self) -> int:
        return self.both_pass + self.both_fail

    @property
    def human_pass(self) -> int:
        return self.both_pass + self.judge_fail_human_pass

    @property
    def judge_pass(self) -> int:
        return self.both_pass + self.judge_pass_human_fail


def percent_agreement(c: Confusion) -> float | None:
    """p_o: the share of items on which judge and human agree."""
    return c.agreements / c.n if c.n else None


def cohen_kappa(c: Confusion) -> float | None:
    """Cohen's κ = (p_o − p_e)/(1 − p_e), p_e = Σ_q p_{q·} p_{·q} (each rater's own marginals).

    Under skewed prevalence p_e is close to 1 and κ collapses even when agreement is high (the kappa
    paradox), which is why AC1 and the prevalence are reported beside it.
    """
    if not c.n:
        return None
    p_o = c.agreements / c.n
    ph, pj = c.human_pass / c.n, c.judge_pass / c.n
    p_e = ph * pj + (1 - ph) * (1 - pj)
    return None if p_e >= 1 else (p_o - p_e) / (1 - p_e)


def gwet_ac1(c: Confusion) -> float | None:
    """Gwet's AC1 = (p_o − p_e)/(1 − p_e) with p_e = 2π(1 − π), π the mean pass share of the two raters
    (Gwet 2008, BJMSP 61:29). Stable under skewed prevalence."""
    if not c.n:
        return None
    p_o = c.agreements / c.n
    pi = (c.human_pass + c.judge_pass) / (2 * c.n)
    p_e = 2 * pi * (1 - pi)
    return (p_o - p_e) / (1 - p_e)  # p_e ≤ 0.5 for two classes


def rogan_gladen(observed_pass_rate: float, sensitivity: float, specificity: float) -> float | None:
    """The pass rate corrected for judge error: θ = (p_obs + q0 − 1)/(q1 + q0 − 1), q1 = sensitivity,
    q0 = specificity (Rogan & Gladen 1978), clipped to [0, 1]. ``None`` when q1 + q0 ≤ 1 (a judge no
    better than chance carries no information about the true rate)."""
    denominator = sensitivity + specificity - 1
    if denominator <= 0:
        return None
    return min(1.0, max(0.0, (observed_pass_rate + specificity - 1) / denominator))


def consistency(groups: Sequence[Sequence[bool]]) -> tuple[float | None, int]:
    """Share of items whose repeated verdicts all agree (test-retest), over items judged at least twice."""
    repeated = [g for g in groups if len(g) >= 2]
    if not repeated:
        return None, 0
    return sum(len(set(g)) == 1 for g in repeated) / len(repeated), len(repeated)
