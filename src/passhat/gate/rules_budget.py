"""Budget rules: latency percentile and cost per success, and the judge-agreement extension point.

Latency and cost are what users and the bill experienced in this run; they are checked as observed
budgets (PASS/FAIL), not inferred, so no interval is claimed for them.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from passhat.gate.context import GateInput, RuleInputError, read_rule_file
from passhat.gate.model import CostPerSuccess, JudgeAgreement, Latency
from passhat.gate.outcome import Outcome, Verdict, three_way
from passhat.stats import percentile

CALIBRATION_FORMAT = "passhat.calibration"
"""Reports written by ``passhat calibrate`` carry ``format: passhat.calibration/1``."""
MAX_CALIBRATION_BYTES = 16 * 1024 * 1024
"""Largest calibration file read (16 MiB): reports are kilobytes, even with per-item details."""


def latency(rule: Latency, inp: GateInput, alpha: float) -> Verdict:
    """The chosen percentile of per-trial latency over the selected cases' graded trials ≤ the budget."""
    tallies = [inp.run.tallies[c] for c in inp.selected(rule.select)]
    values = [x for t in tallies for x in (t.latencies if rule.measure == "end_to_end" else t.ttft)]
    if not values:
        return Verdict("INCONCLUSIVE", f"no trial reported {rule.measure.replace('_', ' ')}", bar=rule.max_seconds)
    p = percentile(values, rule.percentile)
    assert p is not None
    outcome: Outcome = "PASS" if p <= rule.max_seconds else "FAIL"
    sign = "≤" if outcome == "PASS" else ">"
    return Verdict(outcome, f"P{rule.percentile:g} = {p:.3f}s over {len(values)} trial(s) {sign} {rule.max_seconds:g}s",
                   p, rule.max_seconds, details={"trials": len(values), "max": max(values)})


def cost_per_success(rule: CostPerSuccess, inp: GateInput, alpha: float) -> Verdict:
    """Total cost / successful trials over the selected cases ≤ the budget (no success with cost: FAIL)."""
    tallies = [inp.run.tallies[c] for c in inp.selected(rule.select)]
    total, successes = float(sum(x for t in tallies for x in t.costs)), sum(t.passes for t in tallies)
    details = {"total_cost": total, "successes": successes, "trials": sum(t.n for t in tallies)}
    if successes == 0:
        if total > 0:
            return Verdict("FAIL", f"no successful trial; {total:.4f} spent", None, rule.max, details=details)
        return Verdict("INCONCLUSIVE", "no successful trial and no cost reported", None, rule.max, details=details)
    value = total / successes
    outcome: Outcome = "PASS" if value <= rule.max else "FAIL"
    note = " (the agent reported no cost)" if total == 0 else ""
    return Verdict(outcome, f"{total:.4f} over {successes} successful trial(s) = {value:.4f} per success "
                   f"{'≤' if outcome == 'PASS' else '>'} {rule.max:g}{note}", value, rule.max, details=details)


def judge_agreement(rule: JudgeAgreement, inp: GateInput, alpha: float) -> Verdict:
    """Agreement of the LLM judge with human labels, read from a ``passhat calibrate`` report.

    An undefined statistic (null: no items, no disagreement to measure) fails closed, as it does in
    ``passhat calibrate``'s own thresholds: a judge nobody could check is not a calibrated judge.
    """
    path = inp.rule_path(rule.file)
    raw = read_rule_file(path, "file", "calibration file", MAX_CALIBRATION_BYTES,
                         "a `passhat calibrate --out` report is a few kilobytes: is this the right file?")
    try:
        data = json.loads(raw)
    except ValueError as exc:
        raise RuleInputError("file", f"calibration file {path} is not JSON: {exc}") from None
    except RecursionError:
        raise RuleInputError("file", f"calibration file {path} nests too deeply to be a `passhat calibrate` "
                             "report") from None
    if not isinstance(data, dict) or not str(data.get("format", CALIBRATION_FORMAT)).startswith(CALIBRATION_FORMAT):
        raise RuleInputError("file", f"{path} is not a `passhat calibrate` report (format {CALIBRATION_FORMAT}/…)")
    estimate, low, high = _statistic(data, rule.statistic, path)
    details = {"file": str(path), "sha256": hashlib.sha256(raw).hexdigest(), "statistic": rule.statistic,
               "items": data.get("items")}
    if estimate is None:
        return Verdict("FAIL", f"{rule.statistic} is undefined in {path.name} (no items to measure agreement on)",
                       None, rule.min, details=details)
    outcome: Outcome
    if low is not None and high is not None:
        outcome = three_way(low, high, rule.min)
        reason = f"{rule.statistic} = {estimate:.3f} [{low:.3f}, {high:.3f}] vs bar {rule.min:g}"
    else:
        outcome = "PASS" if estimate >= rule.min else "FAIL"
        reason = f"{rule.statistic} = {estimate:.3f} (no interval in the file) vs bar {rule.min:g}"
    return Verdict(outcome, reason, estimate, rule.min, low, high, details)


def _statistic(data: Any, key: str, path: Path) -> tuple[float | None, float | None, float | None]:
    node = data
    for part in key.split("."):
        if not isinstance(node, dict) or part not in node:
            keys = ", ".join(sorted(node)) if isinstance(node, dict) else type(node).__name__
            raise RuleInputError("statistic", f"{path} has no key {key!r} (found: {keys})")
        node = node[part]
    if isinstance(node, dict):
        value = node.get("estimate", node.get("value"))
        low, high = node.get("ci_low", node.get("low")), node.get("ci_high", node.get("high"))
    else:
        value, low, high = node, None, None
    numbers = [x for x in (value, low, high) if x is not None]
    if not all(isinstance(x, int | float) and not isinstance(x, bool) for x in numbers):
        raise RuleInputError("statistic", f"{path}: {key!r} must be a number or {{estimate, ci_low, ci_high}}")
    return (None if value is None else float(value), None if low is None else float(low),
            None if high is None else float(high))
