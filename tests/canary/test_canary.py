"""passhat canary: Newcombe's interval, the decision's error rates, record errors and per-segment output."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from passhat.canary import OutcomeRecord, compare_canary, decide, load_records, newcombe_difference
from passhat.cli import main
from passhat.errors import PasshatError

Z95 = 1.959963984540054


def wilson_by_hand(x: int, n: int) -> tuple[float, float]:
    """Wilson (1927): (p + z²/2n ± z√(p(1−p)/n + z²/4n²)) / (1 + z²/n)."""
    p = x / n
    centre, spread = p + Z95**2 / (2 * n), Z95 * math.sqrt(p * (1 - p) / n + Z95**2 / (4 * n * n))
    return (centre - spread) / (1 + Z95**2 / n), (centre + spread) / (1 + Z95**2 / n)


def test_newcombe_matches_the_published_example_and_the_formula() -> None:
    d, low, high = newcombe_difference(56, 70, 48, 80)
    assert (round(d, 4), round(low, 4), round(high, 4)) == (0.2, 0.0524, 0.3339)  # Newcombe 1998, Table II
    (l1, u1), (l2, u2) = wilson_by_hand(56, 70), wilson_by_hand(48, 80)
    assert low == pytest.approx(0.2 - math.sqrt((0.8 - l1) ** 2 + (u2 - 0.6) ** 2), abs=1e-12)
    assert high == pytest.approx(0.2 + math.sqrt((u1 - 0.8) ** 2 + (0.6 - l2) ** 2), abs=1e-12)


def test_newcombe_at_the_edges_stays_in_range() -> None:
    d, low, high = newcombe_difference(10, 10, 0, 10)
    assert d == 1 and 0 < low < 1 and high == pytest.approx(1)
    with pytest.raises(ValueError):
        newcombe_difference(0, 0, 1, 2)


def test_decide() -> None:
    assert decide(-0.01, 0.03, 0.02) == "PASS"
    assert decide(-0.08, -0.03, 0.02) == "FAIL"
    assert decide(-0.03, 0.01, 0.02) == "INCONCLUSIVE"


REPS = 4000
"""Replications of each simulated canary: a rate near α = 2.5 % is then known to ± 0.25 % (one SE), and 4,000
decisions take milliseconds."""
ALPHA = 0.025
"""One side of a 95 % two-sided interval: the error rate each verdict is documented to keep."""
SE_ALPHA = math.sqrt(ALPHA * (1 - ALPHA) / REPS)


def decisions(p_baseline: float, p_candidate: float, n: int, seed: int) -> dict[str, float]:
    """How often each verdict comes out over REPS simulated canaries of n records per version."""
    rng = np.random.default_rng(seed)
    xb, xc = rng.binomial(n, p_baseline, REPS), rng.binomial(n, p_candidate, REPS)
    out = [decide(*newcombe_difference(int(c), n, int(b), n)[1:], 0.02) for b, c in zip(xb, xc, strict=True)]
    return {d: out.count(d) / REPS for d in ("PASS", "FAIL", "INCONCLUSIVE")}


def test_a_five_point_drop_fails() -> None:
    # normal approximation: FAIL when the upper bound is below -0.02, P = Φ((0.05 − 0.02 − 1.96σ)/σ) ≈ 0.895 with
    # σ = √((0.9·0.1 + 0.85·0.15)/2500); 0.87 leaves five simulation SEs
    rates = decisions(0.90, 0.85, n=2500, seed=1)
    assert rates["FAIL"] >= 0.87 and rates["PASS"] == 0, rates


def test_no_change_never_fails_and_mostly_passes() -> None:
    # a false FAIL would need the difference 4.3 SE below zero: ≈ 1e-5, so none in 4,000; PASS ≈ 0.65 likewise
    rates = decisions(0.90, 0.90, n=2500, seed=2)
    assert rates["FAIL"] <= ALPHA and rates["FAIL"] == 0, rates
    assert rates["PASS"] >= 0.60, rates


@pytest.mark.parametrize("verdict", ["PASS", "FAIL"])
def test_at_exactly_the_allowed_drop_each_verdict_errs_at_alpha(verdict: str) -> None:
    # neither verdict is right when the true drop is max_drop: each is a one-sided test at α, so each comes out
    # α of the time (Newcombe's interval has near-nominal coverage); too conservative an interval would fail too
    rates = decisions(0.90, 0.88, n=2500, seed=3)
    assert abs(rates[verdict] - ALPHA) <= 3.5 * SE_ALPHA, rates


def records(version: str, outcomes: list[str], segment: str | None = None, latency: float = 1.0) -> list[OutcomeRecord]:
    return [OutcomeRecord(version, o, latency + i % 10, cost=0.5, segment=segment) for i, o in enumerate(outcomes)]  # type: ignore[arg-type]


def test_latency_and_cost_intervals_cover_a_planted_change() -> None:
    base = records("a", ["success"] * 300 + ["error"] * 100)
    cand = [OutcomeRecord("b", r.outcome, r.latency_s + 2, cost=1.0) for r in base]
    result = compare_canary(base, cand, max_drop=0.02, seed=3, n_resamples=500)
    lat, ratio = result.overall.latency_p95, result.overall.cost_per_success_ratio
    assert lat is not None and lat.estimate == pytest.approx(2) and lat.low <= 2 <= lat.high
    assert ratio is not None and ratio.estimate == pytest.approx(2) and ratio.low <= 2 <= ratio.high
    assert compare_canary(base, cand, max_drop=0.02, seed=3, n_resamples=500) == result  # seeded


def test_without_cost_on_every_record_cost_is_not_reported() -> None:
    base = records("a", ["success"] * 50)
    cand = [OutcomeRecord("b", "success", 1.0)] * 50
    assert compare_canary(base, cand, max_drop=0.02, n_resamples=100).overall.cost_per_success_ratio is None


def write(path: Path, rows: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.mark.parametrize(("line", "field"), [
    ('{"version": "v", "outcome": "ok", "latency_s": 1}', "outcome"),
    ('{"version": "v", "outcome": "success"}', "latency_s"),
    ('{"version": "v", "outcome": "success", "latency_s": 1, "cost": "$1"}', "cost"),
    ('{"outcome": "success", "latency_s": 1}', "version"),
    ("not json", "not valid JSON"),
    ('{"version": "v", "outcome": "success", "latency_s": 1' + "0" * 400 + "}", "latency_s"),  # past float's range
    ('{"version": "v", "outcome": "success", "latency_s": 1' + "0" * 5000 + "}", "not valid JSON"),  # past int()'s
])
def test_a_malformed_line_exits_2_naming_file_line_and_field(tmp_path: Path, line: str, field: str) -> None:
    good = write(tmp_path / "b.jsonl", [{"version": "v", "outcome": "success", "latency_s": 1}])
    bad = tmp_path / "c.jsonl"
    bad.write_text('{"version": "v", "outcome": "success", "latency_s": 1}\n\n' + line + "\n")
    with pytest.raises(PasshatError, match=f"c.jsonl:3: {field}"):
        load_records(bad)
    r = CliRunner().invoke(main, ["canary", str(good), str(bad)])
    assert r.exit_code == 2 and f"{bad}:3: {field}" in r.output, r.output


def test_per_segment_output(tmp_path: Path) -> None:
    def rows(version: str, web_successes: int) -> list[dict[str, object]]:
        return [{"version": version, "outcome": "success" if i < web_successes else "error", "latency_s": 1.0,
                 "cost": 0.1, "segment": "web"} for i in range(100)] + \
               [{"version": version, "outcome": "success", "latency_s": 2.0, "segment": "voice"} for _ in range(50)]

    b, c = write(tmp_path / "b.jsonl", rows("v1", 95)), write(tmp_path / "c.jsonl", rows("v2", 60))
    r = CliRunner().invoke(main, ["canary", str(b), str(c), "--json", str(tmp_path / "out.json"), "--resamples", "200"])
    assert r.exit_code == 1, r.output
    assert "segment voice" in r.output and "segment web" in r.output and "canary FAIL" in r.output
    out = json.loads((tmp_path / "out.json").read_text())
    segments = {s["segment"]: s for s in out["segments"]}
    assert segments["web"]["rates"]["success"]["difference"] == pytest.approx(-0.35)
    assert segments["voice"]["rates"]["success"]["difference"] == 0
    assert segments["web"]["rates"]["error"]["counts"] == [5, 100, 40, 100]
    assert out["overall"]["cost_per_success_ratio"] is None  # voice records carry no cost
    assert segments["web"]["cost_per_success_ratio"]["estimate"] == pytest.approx(95 / 60)
    assert out["decision"] == "FAIL" and out["exit_code"] == 1 and out["versions"] == {"baseline": ["v1"],
                                                                                      "candidate": ["v2"]}


def test_costs_adding_up_past_the_float_range_are_bad_input(tmp_path: Path) -> None:
    """Σ cost of 1e308 twice is inf: refused at the line where the sum leaves the float range (exit 2)."""
    good = write(tmp_path / "b.jsonl", [{"version": "v", "outcome": "success", "latency_s": 1, "cost": 1}])
    huge = write(tmp_path / "c.jsonl", [{"version": "v", "outcome": "success", "latency_s": 1, "cost": 1e308}] * 3)
    r = CliRunner().invoke(main, ["canary", str(good), str(huge), "--json", str(tmp_path / "out.json")])
    assert r.exit_code == 2 and f"{huge}:2: cost:" in r.output, r.output
    assert len(r.output.strip().splitlines()) == 1 and not (tmp_path / "out.json").exists()


def test_json_output_has_no_infinity_for_a_zero_cost_baseline(tmp_path: Path) -> None:
    """Cost per success of a free baseline: the ratio is undefined, written as null (not Infinity)."""
    b = write(tmp_path / "b.jsonl", [{"version": "v1", "outcome": "success", "latency_s": 1, "cost": 0}] * 20)
    c = write(tmp_path / "c.jsonl", [{"version": "v2", "outcome": "success", "latency_s": 1, "cost": 0.5}] * 20)
    r = CliRunner().invoke(main, ["canary", str(b), str(c), "--json", str(tmp_path / "out.json"), "--resamples", "100"])
    assert r.exit_code in (0, 3) and "Warning" not in r.output and " inf " not in r.output, r.output
    text = (tmp_path / "out.json").read_text()
    out = json.loads(text, parse_constant=lambda name: pytest.fail(f"{name} in the JSON output"))
    assert out["overall"]["cost_per_success_ratio"]["estimate"] is None
    assert out["overall"]["cost_per_success_difference"]["estimate"] == pytest.approx(0.5)
