"""JUnit XML for CI test reporters: one testcase per case, and the gate's rules as a second test suite.

A case is a failed testcase when any of its graded trials failed (the agent is not reliable on it);
the failure message is the graders' reasons for the failing trials. Trials that ended in an
infrastructure error are reported as an ``<error>``, because they are neither pass nor fail. A gate
rule that FAILs is a failure; INCONCLUSIVE and SKIPPED rules are ``<skipped>`` with the reason, so a
reporter shows them without turning the build red (the exit code, 3, carries the warning).
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from passhat.runner.records import TrialRecord

if TYPE_CHECKING:
    from passhat.models import GateResult, Summary

MAX_LINES = 40
"""Failure bodies list at most this many failing checks per case; the rest are counted."""
_INVALID_XML = re.compile(r"[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _clean(text: str) -> str:
    return _INVALID_XML.sub("?", text)


@dataclass
class _CaseLog:
    seconds: float = 0.0
    failures: list[str] = field(default_factory=list)
    failed_trials: int = 0
    errors: list[str] = field(default_factory=list)


def _collect(records: Iterable[TrialRecord]) -> dict[str, _CaseLog]:
    logs: dict[str, _CaseLog] = {}
    for r in records:
        log = logs.setdefault(r.case_id, _CaseLog())
        log.seconds += r.timing.total_s
        if r.outcome == "fail":
            log.failed_trials += 1
            grades = r.failed_grades()
            reasons = [f"{g.name}: {g.reason}" for g in grades] or [f"ended: {r.end_reason}"]
            log.failures.extend(f"trial {r.trial}: {reason}" for reason in reasons)
        elif r.outcome == "error":
            last = (r.error or "infrastructure error").strip().splitlines()[-1:]
            log.errors.append(f"trial {r.trial}: {last[0] if last else 'infrastructure error'}")
    return logs


def _case_suite(summary: Summary, records: Iterable[TrialRecord]) -> ET.Element:
    suite = summary.suite
    logs = _collect(records)
    el = ET.Element("testsuite", name=suite.name)
    props = ET.SubElement(el, "properties")
    for name, value in (("agent", summary.agent), ("suite_hash", suite.hash), ("trials_per_case", suite.trials_per_case)):
        ET.SubElement(props, "property", name=name, value=str(value))
    failures = errors = 0
    total = 0.0
    for case in summary.cases:
        log = logs.get(case.id, _CaseLog())
        total += log.seconds
        tc = ET.SubElement(el, "testcase", classname=suite.name, name=case.id, time=f"{log.seconds:.3f}")
        if log.failed_trials:
            failures += 1
            first = log.failures[0] if log.failures else ""
            extra = len(log.failures) - MAX_LINES
            body = log.failures[:MAX_LINES] + ([f"… {extra} more failing check(s)"] if extra > 0 else [])
            f = ET.SubElement(tc, "failure", type="fail",
                              message=_clean(f"{log.failed_trials} of {case.n} graded trial(s) failed: {first}"))
            f.text = _clean("\n".join(body))
        if log.errors:
            errors += 1
            e = ET.SubElement(tc, "error", type="infrastructure",
                              message=f"{len(log.errors)} trial(s) ended in infrastructure errors (neither pass nor fail)")
            e.text = _clean("\n".join(log.errors[:MAX_LINES]))
        out = ET.SubElement(tc, "system-out")
        out.text = f"{case.successes}/{case.n} trials passed, {case.errors} infrastructure error(s)"
    el.set("tests", str(len(summary.cases)))
    el.set("failures", str(failures))
    el.set("errors", str(errors))
    el.set("skipped", "0")
    el.set("time", f"{total:.3f}")
    return el


def _gate_suite(summary: Summary, gate: GateResult) -> ET.Element:
    info = gate.gate
    el = ET.Element("testsuite", name=f"gate {info.name}")
    props = ET.SubElement(el, "properties")
    for name, value in (("outcome", gate.outcome), ("preregistered", info.preregistered),
                        ("gate_sha256", info.sha256), ("override", info.override is not None)):
        ET.SubElement(props, "property", name=name, value=str(value))
    counts = {"FAIL": 0, "skipped": 0}
    for rule in gate.rules:
        tc = ET.SubElement(el, "testcase", classname=f"{summary.suite.name}.gate", name=rule.name, time="0")
        if rule.outcome == "FAIL":
            counts["FAIL"] += 1
            ET.SubElement(tc, "failure", type="FAIL", message=_clean(rule.reason)).text = _clean(rule.reason)
        elif rule.outcome in ("INCONCLUSIVE", "SKIPPED"):
            counts["skipped"] += 1
            ET.SubElement(tc, "skipped", message=_clean(f"{rule.outcome}: {rule.reason}"))
        else:
            ET.SubElement(tc, "system-out").text = _clean(f"PASS: {rule.reason}")
    el.set("tests", str(len(gate.rules)))
    el.set("failures", str(counts["FAIL"]))
    el.set("errors", "0")
    el.set("skipped", str(counts["skipped"]))
    el.set("time", "0")
    return el


def junit_xml(summary: Summary, records: Iterable[TrialRecord], gate: GateResult | None = None) -> str:
    """The JUnit XML document for a run's summary and records, plus its gate result when there is one."""
    root = ET.Element("testsuites", name="passhat")
    suites = [_case_suite(summary, records)] + ([_gate_suite(summary, gate)] if gate else [])
    for s in suites:
        root.append(s)
    for attr in ("tests", "failures", "errors", "skipped"):
        root.set(attr, str(sum(int(s.get(attr, "0")) for s in suites)))
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"
