"""The canary rule: production outcome files compared by ``passhat canary``'s own statistics and decision.

The verdict is :func:`passhat.canary.compare_canary`'s ``decision``, not a re-implementation, so a gate and
the command given the same files, ``max_drop`` and ``confidence`` always agree. Each file is read once:
the bytes parsed are the bytes hashed into gate.json.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from passhat.canary import OutcomeRecord, compare_canary, parse_records
from passhat.errors import PasshatError
from passhat.gate.context import GateInput, RuleInputError, read_rule_file
from passhat.gate.model import Canary
from passhat.gate.outcome import Verdict

MAX_CANARY_BYTES = 512 * 1024 * 1024
"""Largest outcome file read (512 MiB): millions of records of a hundred bytes each."""


def canary(rule: Canary, inp: GateInput, alpha: float) -> Verdict:
    """PASS/FAIL/INCONCLUSIVE on the overall success-rate difference, as ``passhat canary`` decides it."""
    baseline, b_info = _read(inp, rule.baseline, "baseline")
    candidate, c_info = _read(inp, rule.candidate, "candidate")
    result = compare_canary(baseline, candidate, max_drop=rule.max_drop, confidence=rule.confidence)
    success = result.overall.rates["success"]
    assert success is not None  # both files have records (parse_records refuses an empty one)
    details = {"baseline": {**b_info, "versions": result.versions["baseline"]},
               "candidate": {**c_info, "versions": result.versions["candidate"]},
               "success_counts": list(success.counts), "confidence": rule.confidence, "max_drop": rule.max_drop}
    reason = (f"success rate {success.baseline:.1%} → {success.candidate:.1%} ({success.difference:+.2%}, "
              f"{rule.confidence:.0%} interval [{success.low:+.2%}, {success.high:+.2%}]) vs allowed drop "
              f"{rule.max_drop:.1%}")
    return Verdict(result.decision, reason, success.difference, -rule.max_drop, success.low, success.high, details)


def _read(inp: GateInput, file: str, field: str) -> tuple[list[OutcomeRecord], dict[str, Any]]:
    path: Path = inp.rule_path(file)
    raw = read_rule_file(path, field, f"{field} outcome file", MAX_CANARY_BYTES,
                         "split it, or compare with `passhat canary` on a sample")
    try:
        records = parse_records(raw, path)
    except PasshatError as exc:
        raise RuleInputError(field, str(exc)) from None
    return records, {"file": str(path), "sha256": hashlib.sha256(raw).hexdigest(), "records": len(records)}
