"""Loading case files and suites, with errors that name the file and the field.

Everything is checked before any trial runs: YAML syntax, unknown fields, references to tools,
fixtures, tables and columns, SQL that does not compile, regular expressions that do not parse, and
assertions on custom graders (the domain must register the grader; the parameters must fit it).
"""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from passhat.cases.assertions import ASSERTION_KINDS, CustomAssertion
from passhat.cases.assertions.expected import ExpectState
from passhat.cases.assertions.fixture import Fixture, check_regex
from passhat.cases.call_checks import call_problems
from passhat.cases.expected import ReferenceFailed, expected_state
from passhat.cases.fault_checks import fault_problems
from passhat.cases.model import Case
from passhat.errors import CaseError, PasshatError
from passhat.inputs import check_depth, read_input_text, too_deep
from passhat.validation import field_path, first_problem, load_yaml, yaml_problem

_field_path = field_path  # kept for the linter, which reuses this module's helpers


def parse_case(data: Any, file: str) -> Case:
    """Validate one case mapping; the first problem is reported with its field path."""
    if not isinstance(data, dict):
        raise CaseError(file, "", f"a case file holds one mapping (id, domain, instruction, ...), not {type(data).__name__}")
    try:
        return Case.model_validate(data)
    except ValidationError as exc:
        first, where, more = first_problem(exc)
        message = first["msg"]
        if first["type"] == "extra_forbidden":
            message = "unknown field"
            parent = first["loc"][:-1]
            model = _model_at(parent)
            if model is not None:
                message += f"; valid fields: {', '.join(model.model_fields)}"
        raise CaseError(file, where, message + more) from None


def _model_at(loc: tuple[Any, ...]) -> Any:
    """The pydantic model class at a location inside ``Case`` (best effort, for error hints)."""
    model: Any = Case
    for part in loc:
        if isinstance(part, int):
            continue
        if part in ASSERTION_KINDS:
            model = ASSERTION_KINDS[part]
            continue
        info = getattr(model, "model_fields", {}).get(part)
        if info is None:
            return None
        ann = info.annotation
        args = [a for a in getattr(ann, "__args__", ()) if hasattr(a, "model_fields")]
        model = ann if hasattr(ann, "model_fields") else (args[0] if args else None)
        if model is None:
            return None
    return model


def load_case(path: Path) -> Case:
    """Read and validate one YAML case file."""
    try:
        text = read_input_text(path, "case")  # a regular file within the size cap (passhat/inputs.py)
    except PasshatError as exc:
        raise CaseError(str(path), "", str(exc).removeprefix(f"{path}: ")) from None
    try:
        data = load_yaml(text)
    except yaml.YAMLError as exc:
        raise CaseError(str(path), *yaml_problem(exc)) from None
    except RecursionError:
        raise too_deep(str(path)) from None
    check_depth(data, str(path))
    return parse_case(data, str(path))


def check_references(case: Case, file: str, domain: Any) -> None:
    """Check a case against its domain: tools, fixture, tables, columns, SQL and patterns."""
    tools = set(domain.tools)

    def known_tool(name: str, field: str) -> None:
        if name not in tools:
            raise CaseError(file, field, f"unknown tool {name!r}; domain {domain.name!r} has: {', '.join(sorted(tools))}")

    for i, name in enumerate(case.allowed_tools or []):
        known_tool(name, f"allowed_tools.{i}")
    for i, name in enumerate(case.forbidden_tools):
        known_tool(name, f"forbidden_tools.{i}")
    for i, req in enumerate(case.required_tools):
        known_tool(req.tool, f"required_tools.{i}.tool")
    user_tools = set(getattr(domain, "user_tools", {}))
    for i, call in enumerate(case.reference):
        if call.by == "user" and call.tool not in user_tools:
            raise CaseError(file, f"reference.{i}.tool", f"unknown user tool {call.tool!r}; domain {domain.name!r} "
                                                          f"has these user tools: {', '.join(sorted(user_tools)) or 'none'}")
        if call.by == "agent":
            known_tool(call.tool, f"reference.{i}.tool")
    for i, c in enumerate(case.order):
        known_tool(c.first, f"order.{i}.first")
        known_tool(c.then, f"order.{i}.then")
    for i, f in enumerate(case.faults):
        known_tool(f.tool, f"faults.{i}.tool")
    for problem in [*fault_problems(case, file, domain), *call_problems(case, file, domain)]:
        raise problem
    if case.fixture not in domain.fixture_names:
        raise CaseError(file, "fixture", f"unknown fixture {case.fixture!r}; domain has: {', '.join(domain.fixture_names)}")
    for i, turn in enumerate(case.user.turns):
        check_regex(turn.when, file, f"user.turns.{i}.when")
    for i, a in enumerate(case.assertions):
        if isinstance(a, CustomAssertion):
            check_params(a, known_grader(a, f"assertions.{i}.{a.kind}", file, domain), f"assertions.{i}.{a.kind}", file)
        a.check_workspace(f"assertions.{i}.{a.kind}", file, case.fixture in domain.workspaces)
    with domain.reading(case.fixture) as reader:  # the fixture's state, read-only (a pooled copy, not a new one)
        fixture = Fixture(file, reader.tables if reader is not None else {}, reader)
        for i, a in enumerate(case.assertions):
            a.check_fixture(f"assertions.{i}.{a.kind}", fixture)
    check_reference(case, file, domain)


def check_reference(case: Case, file: str, domain: Any) -> None:
    """``expect_state: reference`` has a reference to compare with, and every reference call runs as written
    (run now, once, and cached for the trials: ``cases/expected.py``)."""
    for i, a in enumerate(case.assertions):
        if isinstance(a, ExpectState) and a.reference and not case.reference:
            raise CaseError(file, f"assertions.{i}.expect_state",
                            "`expect_state: reference` needs the case's `reference:` calls "
                            "(e.g. reference: [{tool: issue_refund, args: {...}}]) to compute the expected state")
    try:
        expected_state(case, domain)
    except ReferenceFailed as exc:
        raise CaseError(file, exc.field, exc.message) from None


def known_grader(a: CustomAssertion, field: str, file: str, domain: Any) -> Any:
    """The domain's grader named by a custom assertion; an unknown name lists what is available."""
    graders = getattr(domain, "graders", {})
    if a.kind in graders:
        return graders[a.kind]
    close = difflib.get_close_matches(a.kind, [*ASSERTION_KINDS, *graders], n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    registered = ", ".join(sorted(graders)) or "none"
    raise CaseError(file, field, f"unknown assertion {a.kind!r}{hint}: not a built-in assertion "
                                 f"({', '.join(ASSERTION_KINDS)}) nor a grader of domain {domain.name!r} "
                                 f"(its graders: {registered})")


def check_params(a: CustomAssertion, grader: Any, field: str, file: str) -> None:
    """The assertion's parameters validated against the grader's signature, as they will be when graded."""
    try:
        grader.params.model_validate(a.params)
    except ValidationError as exc:
        first, where, more = first_problem(exc)
        message = first["msg"]
        if first["type"] == "extra_forbidden":
            message = "unknown parameter"
        if first["type"] in ("extra_forbidden", "missing"):
            message += f"; grader {grader.signature()}"
        raise CaseError(file, f"{field}.{where}", message + more) from None
