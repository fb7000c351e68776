"""Release gates written before the results: a YAML file of rules, each decided PASS, FAIL or INCONCLUSIVE.

Imports compare, results, stats and the run store; nothing below it imports this package.

The names below load with their module on first use (:pep:`562`): ``passhat run`` registers a gate before
its first trial, and evaluating one needs the statistics (scipy), which the trials do not.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from passhat.gate.load import GateError, LoadedGate, load_gate, parse_gate
    from passhat.gate.outcome import EXIT_BAD_INPUT, EXIT_CODES, RuleResult, overall
    from passhat.gate.registration import registration, registration_for_run, resolve_gate
    from passhat.gate.report import evaluate_gate, unreachable_before_run, write_gate_result
    from passhat.gate.schema import RULE_KINDS, GateFile
    from passhat.gate.stored import GATE_RESULT, read_gate_result

_WHERE = {
    "load": ("GateError", "LoadedGate", "load_gate", "parse_gate"),
    "outcome": ("EXIT_BAD_INPUT", "EXIT_CODES", "RuleResult", "overall"),
    "registration": ("registration", "registration_for_run", "resolve_gate"),
    "report": ("evaluate_gate", "unreachable_before_run", "write_gate_result"),
    "schema": ("RULE_KINDS", "GateFile"),
    "stored": ("GATE_RESULT", "read_gate_result"),
}
_MODULE = {name: module for module, names in _WHERE.items() for name in names}


def __getattr__(name: str) -> Any:
    module = _MODULE.get(name)
    if module is None:
        raise AttributeError(f"module 'passhat.gate' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"passhat.gate.{module}"), name)
    globals()[name] = value
    return value


__all__ = [
    "EXIT_BAD_INPUT",
    "EXIT_CODES",
    "GATE_RESULT",
    "RULE_KINDS",
    "GateError",
    "GateFile",
    "LoadedGate",
    "RuleResult",
    "evaluate_gate",
    "load_gate",
    "overall",
    "parse_gate",
    "read_gate_result",
    "registration",
    "registration_for_run",
    "resolve_gate",
    "unreachable_before_run",
    "write_gate_result",
]
