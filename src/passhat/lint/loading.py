"""Loading a suite for lint: every file, every problem — where ``load_suite`` stops at the first.

The checks are the loader's own (``cases/load.py``: the same field paths and messages), called one
item at a time so one bad assertion does not hide the next. Within one assertion the first problem is
reported (an unknown table makes its column checks meaningless anyway).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from passhat.cases import Case
from passhat.cases.assertions import CustomAssertion
from passhat.cases.assertions.fixture import Fixture, check_regex
from passhat.cases.call_checks import Contradiction, call_problems
from passhat.cases.fault_checks import CannotFire, fault_problems
from passhat.cases.load import (
    _field_path,
    _model_at,
    check_params,
    check_reference,
    known_grader,
)
from passhat.domain import Domain, load_domain, resolve_domain_ref
from passhat.errors import CaseError, DomainError
from passhat.lint.findings import Code, Finding
from passhat.validation import load_yaml, yaml_problem


@dataclass(frozen=True)
class LoadedCase:
    """A case that validated, with its file and its domain (``None`` if the domain did not load)."""

    case: Case
    file: str
    domain: Domain | None


def _schema_findings(exc: ValidationError, file: str, case_id: str | None) -> list[Finding]:
    out = []
    for e in exc.errors():
        message = e["msg"]
        if e["type"] == "extra_forbidden":
            model = _model_at(e["loc"][:-1])
            message = "unknown field" + (f"; valid fields: {', '.join(model.model_fields)}" if model is not None else "")
        out.append(Finding("schema", file, _field_path(e["loc"]), message, case_id))
    return out


def parse_file(path: Path) -> tuple[Case | None, Any, list[Finding]]:
    """(case or None, raw data, findings) for one YAML file."""
    file = str(path)
    try:
        data = load_yaml(path.read_text("utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        return None, None, [Finding("yaml", file, *yaml_problem(exc))]
    if not isinstance(data, dict):
        return None, data, [Finding("schema", file, "", "a case file holds one mapping (id, domain, instruction, ...)")]
    raw_id = data.get("id") if isinstance(data.get("id"), str) else None
    try:
        return Case.model_validate(data), data, []
    except ValidationError as exc:
        return None, data, _schema_findings(exc, file, raw_id)


def _code_of(exc: CaseError) -> Code:
    """The finding code of a loader error: ``cannot-fire`` for a check no trial could exercise, else by field."""
    return "cannot-fire" if isinstance(exc, CannotFire) else _code_for(exc.field)


def _code_for(field: str) -> Code:
    last = field.rsplit(".", 1)[-1]
    if last == "table" or ".tables." in field:
        return "unknown-table"
    if last in ("where", "field", "column"):
        return "unknown-column"
    if last in ("sql", "query"):
        return "bad-sql"
    return "bad-regex" if last in ("pattern", "when") else "schema"


def reference_findings(case: Case, file: str, domain: Domain) -> list[Finding]:
    """Every unknown tool, fixture, table, column or grader, bad SQL, pattern or grader parameters, and
    impossible tool rules."""
    out: list[Finding] = []
    tools = set(domain.tools)

    def add(code: Code, field: str, message: str) -> None:
        out.append(Finding(code, file, field, message, case.id))

    refs = [(n, f"allowed_tools.{i}") for i, n in enumerate(case.allowed_tools or [])]
    refs += [(n, f"forbidden_tools.{i}") for i, n in enumerate(case.forbidden_tools)]
    refs += [(r.tool, f"required_tools.{i}.tool") for i, r in enumerate(case.required_tools)]
    refs += [(getattr(c, end), f"order.{i}.{end}") for i, c in enumerate(case.order) for end in ("first", "then")]
    refs += [(f.tool, f"faults.{i}.tool") for i, f in enumerate(case.faults)]
    refs += [(c.tool, f"reference.{i}.tool") for i, c in enumerate(case.reference) if c.by == "agent"]
    for name, field in refs:
        if name not in tools:
            add("unknown-tool", field, f"unknown tool {name!r}; domain {domain.name!r} has: {', '.join(sorted(tools))}")
    user_tools = set(getattr(domain, "user_tools", {}))
    for i, c in enumerate(case.reference):
        if c.by == "user" and c.tool not in user_tools:
            add("unknown-tool", f"reference.{i}.tool", f"unknown user tool {c.tool!r}; domain {domain.name!r} has these "
                                                        f"user tools: {', '.join(sorted(user_tools)) or 'none'}")
    for problem in fault_problems(case, file, domain):
        add("cannot-fire" if isinstance(problem, CannotFire) else "schema", problem.field, problem.message)
    for problem in call_problems(case, file, domain):
        add("contradiction" if isinstance(problem, Contradiction) else "cannot-fire", problem.field, problem.message)
    for i, turn in enumerate(case.user.turns):
        try:
            check_regex(turn.when, file, f"user.turns.{i}.when")
        except CaseError as exc:
            add("bad-regex", exc.field, exc.message)
    for i, a in enumerate(case.assertions):
        if isinstance(a, CustomAssertion):
            field = f"assertions.{i}.{a.kind}"
            try:
                grader = known_grader(a, field, file, domain)
            except CaseError as exc:
                add("unknown-grader", exc.field, exc.message)
                continue
            try:
                check_params(a, grader, field, file)
            except CaseError as exc:
                add("bad-grader-params", exc.field, exc.message)
    if case.fixture not in domain.fixture_names:
        add("unknown-fixture", "fixture", f"unknown fixture {case.fixture!r}; domain has: {', '.join(domain.fixture_names)}")
        return out
    try:
        domain.world_images(case.fixture)  # built on first use: a fixture that cannot be built is the domain's error
    except DomainError as exc:
        add("domain", "fixture", str(exc))
        return out
    with domain.reading(case.fixture) as reader:
        fixture = Fixture(file, reader.tables if reader is not None else {}, reader)
        for i, a in enumerate(case.assertions):
            try:
                a.check_fixture(f"assertions.{i}.{a.kind}", fixture)
                a.check_workspace(f"assertions.{i}.{a.kind}", file, case.fixture in domain.workspaces)
            except CaseError as exc:
                add(_code_of(exc), exc.field, exc.message)
    if not out:  # the reference runs on a case that is otherwise sound (an unknown tool would only repeat)
        try:
            check_reference(case, file, domain)
        except CaseError as exc:
            add("bad-reference", exc.field, exc.message)
    return out


def load_for_lint(folder: Path) -> tuple[list[LoadedCase], list[tuple[str, Any]], list[Finding]]:
    """Valid cases, (file, raw id) of every file, and every finding of loading and references."""
    paths = sorted(p for p in folder.iterdir() if p.suffix in (".yaml", ".yml") and p.is_file())
    if not paths:
        return [], [], [Finding("schema", str(folder), "", "no case files (*.yaml) in this folder")]
    domains: dict[str, Domain | DomainError] = {}
    by_key: dict[str, Domain] = {}  # by resolved reference: two spellings of a path load once
    loaded: list[LoadedCase] = []
    ids: list[tuple[str, Any]] = []
    findings: list[Finding] = []
    for path in paths:
        case, raw, found = parse_file(path)
        findings += found
        ids.append((str(path), raw.get("id") if isinstance(raw, dict) else None))
        if case is None:
            continue
        if case.domain not in domains:
            try:
                key = resolve_domain_ref(case.domain, folder).key
                if key not in by_key:
                    by_key[key] = load_domain(case.domain, folder)
                domains[case.domain] = by_key[key]
            except DomainError as exc:
                domains[case.domain] = exc
        domain = domains[case.domain]
        if isinstance(domain, DomainError):
            findings.append(Finding("domain", str(path), "domain", str(domain), case.id))
            loaded.append(LoadedCase(case, str(path), None))
            continue
        findings += reference_findings(case, str(path), domain)
        loaded.append(LoadedCase(case, str(path), domain))
    return loaded, ids, findings
