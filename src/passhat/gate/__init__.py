"""Release gates written before the results: a YAML file of rules, each decided PASS, FAIL or INCONCLUSIVE.

Imports compare, results, stats and the run store; nothing below it imports this package.
"""

from passhat.gate.load import GateError, LoadedGate, load_gate, parse_gate
from passhat.gate.outcome import EXIT_BAD_INPUT, EXIT_CODES, RuleResult, overall
from passhat.gate.registration import registration, registration_for_run, resolve_gate
from passhat.gate.report import GATE_RESULT, evaluate_gate, gate_run, read_gate_result, write_gate_result
from passhat.gate.schema import RULE_KINDS, GateFile

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
    "gate_run",
    "load_gate",
    "overall",
    "parse_gate",
    "read_gate_result",
    "registration",
    "registration_for_run",
    "resolve_gate",
    "write_gate_result",
]
