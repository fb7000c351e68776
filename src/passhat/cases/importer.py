"""Case skeletons from real requests: one JSON object per line in, one YAML case per line out.

Seed 001 §3 samples real requests, de-identified, into the evaluation set. A request says what a
user asked; only a person can say what the right final state is. So each skeleton has the request as
its instruction, ``tags: {source: production}``, split ``dev``, no assertions and ``TODO`` placeholders
— and ``passhat cases lint`` fails on it (``unfinished``, ``no-assertions``) until a person finishes it.

Accepted fields (anything else is ignored and reported): ``text`` (required; or ``instruction``,
``request``, ``message``, ``query``), ``id``, ``identity`` (or ``user``), ``facts`` (object), ``tags``
(object), ``group``, ``split``, ``fixture``, ``description`` (or ``note``). Every string is passed through
the redaction rules (e-mail, phone and card numbers, see ``passhat.redaction``) unless disabled.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from passhat.cases.load import parse_case
from passhat.domain import BUILTIN_DOMAINS, Domain, load_domain
from passhat.errors import CaseError, DomainError
from passhat.redaction import Redactor
from passhat.validation import dump_yaml

TEXT_FIELDS = ("text", "instruction", "request", "message", "query")
ACCEPTED = {*TEXT_FIELDS, "id", "identity", "user", "facts", "tags", "group", "split", "fixture", "description", "note"}
HEADER = ("# Imported from {source} line {line} by `passhat cases import`. Finish every TODO (what the case tests,\n"
          "# who the user is in the fixture, the assertions on the final state), then run `passhat cases lint`.\n")


@dataclass
class ImportResult:
    """What an import wrote and what it left out."""

    written: list[Path] = field(default_factory=list)
    ignored_fields: dict[str, int] = field(default_factory=dict)
    """Field name → number of lines that had it (not part of a case skeleton)."""


def _case_id(raw: Any, line: int) -> str:
    if raw is None:
        return f"prod-{line:04d}"
    text = re.sub(r"[^A-Za-z0-9_.\-]+", "-", str(raw)).strip("-._")
    return f"prod-{text}" if text else f"prod-{line:04d}"


def skeleton(obj: dict[str, Any], line: int, domain: str, redactor: Redactor) -> dict[str, Any]:
    """The case mapping for one request (validated by the caller)."""
    text = next((obj[k] for k in TEXT_FIELDS if isinstance(obj.get(k), str) and obj[k].strip()), None)
    if text is None:
        raise ValueError(f"no request text: give one of {', '.join(TEXT_FIELDS)} as a non-empty string")
    r = redactor.value
    identity = obj.get("identity", obj.get("user"))
    tags = {str(k): str(v) for k, v in (obj.get("tags") or {}).items()}
    given = obj.get("description") or obj.get("note")
    case: dict[str, Any] = {
        "id": _case_id(r(obj.get("id")), line),
        "domain": domain,
        "fixture": obj.get("fixture", "default"),
        "description": f"TODO: finish — {r(str(given))}" if given else
        "TODO: what this case tests and why; the initial state it needs and how success shows in the final state.",
        "instruction": r(text.strip()),
        "user": {"identity": r(str(identity)) if identity is not None else "TODO: the user's id in the fixture",
                 "facts": r(obj.get("facts") or {})},
        "assertions": [],
        "tags": {**r(tags), "source": "production"},
        "split": obj.get("split", "dev"),
    }
    if obj.get("group"):
        case["group"] = r(str(obj["group"]))
    return case


def domain_reference(domain: str, out: Path) -> tuple[str, Domain]:
    """The ``domain:`` value for cases in ``out`` (a file path is made relative to it) and the loaded domain."""
    target, sep, attr = domain.partition(":")
    path = Path(target)
    if domain in BUILTIN_DOMAINS or not (path.suffix == ".py" or path.is_dir()):
        return domain, load_domain(domain)
    # the attribute is cut off the text as given: Path() drops a leading "./", so str(path) is shorter
    loaded = load_domain(str(path.resolve()) + sep + attr)
    return os.path.relpath(path.resolve(), Path(out).resolve()) + sep + attr, loaded


def import_requests(source: Path, domain: str, out: Path, *, redactor: Redactor | None = None) -> ImportResult:
    """Write one skeleton per JSONL line into ``out``. Everything is checked before anything is written."""
    redactor = redactor or Redactor()
    result = ImportResult()
    try:
        domain, loaded = domain_reference(domain, out)
    except DomainError as exc:
        raise CaseError(str(source), "--domain", str(exc)) from None
    pending: list[tuple[Path, str]] = []
    try:
        lines = Path(source).read_text("utf-8").splitlines()
    except OSError as exc:
        raise CaseError(str(source), "", f"cannot read: {exc}") from None
    for n, raw in enumerate(lines, 1):
        if not raw.strip():
            continue
        try:
            obj = json.loads(raw)
            if not isinstance(obj, dict):
                raise ValueError("each line must be one JSON object")
            case = skeleton(obj, n, domain, redactor)
        except ValueError as exc:
            raise CaseError(str(source), f"line {n}", str(exc)) from None
        parse_case(case, f"{source} line {n}")  # a skeleton is a valid case file, only unfinished
        if case["fixture"] not in loaded.fixture_names:
            raise CaseError(str(source), f"line {n}: fixture",
                            f"unknown fixture {case['fixture']!r}; domain has: {', '.join(loaded.fixture_names)}")
        for key in sorted(set(obj) - ACCEPTED):
            result.ignored_fields[key] = result.ignored_fields.get(key, 0) + 1
        path = Path(out) / f"{case['id']}.yaml"
        if any(p == path for p, _ in pending):
            raise CaseError(str(source), f"line {n}",
                            f"case id {case['id']!r} is used by an earlier line; give lines distinct ids")
        if path.exists():
            raise CaseError(str(source), f"line {n}", f"{path} already exists (from an earlier import?); "
                                                      "import into an empty folder or remove it")
        body = dump_yaml(case, sort_keys=False, allow_unicode=True, width=110)
        pending.append((path, HEADER.format(source=Path(source).name, line=n) + body))
    Path(out).mkdir(parents=True, exist_ok=True)
    for path, text in pending:
        path.write_text(text, "utf-8")
        result.written.append(path)
    return result
