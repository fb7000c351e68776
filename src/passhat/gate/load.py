"""Reading a gate file, with errors that name the file, the field and what would be valid.

The file is hashed as bytes on disk: the hash registered in a run's manifest is what ``passhat gate``
later compares against, so any edit — even a comment — after the run started is visible.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from passhat.errors import PasshatError
from passhat.gate.schema import RULE_KINDS, GateFile
from passhat.gate.select import Selection
from passhat.inputs import read_input
from passhat.validation import first_problem, load_yaml, yaml_problem


class GateError(PasshatError):
    """A gate file is malformed or cannot be used for this run (bad input, exit code 2)."""

    def __init__(self, file: str, field: str, message: str) -> None:
        self.file, self.field, self.message = file, field, message
        super().__init__(f"{file}: {field}: {message}" if field else f"{file}: {message}")


@dataclass(frozen=True)
class LoadedGate:
    """A parsed gate file and the hash of its bytes."""

    path: Path
    sha256: str
    gate: GateFile


def load_gate(path: Path) -> LoadedGate:
    """Read, hash and validate a gate file; raises :class:`GateError` on the first problem."""
    try:  # a regular file within the input cap: a named pipe blocked the read for ever, /dev/zero never ended
        raw = read_input(Path(path), "gate file")
    except PasshatError as exc:
        raise GateError(str(path), "", str(exc).removeprefix(f"{path}: ")) from None
    try:
        data = load_yaml(raw.decode("utf-8"))  # alias bombs refused like in case files
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise GateError(str(path), *yaml_problem(exc)) from None
    return LoadedGate(Path(path), hashlib.sha256(raw).hexdigest(), parse_gate(data, str(path)))


def parse_gate(data: Any, file: str) -> GateFile:
    """Validate a gate mapping; the first problem is reported with its field path (e.g. ``rules.2.k``)."""
    if not isinstance(data, dict):
        raise GateError(file, "", f"a gate file holds one mapping (name, alpha, rules), not {type(data).__name__}")
    try:
        return GateFile.model_validate(data)
    except ValidationError as exc:
        first, where, more = first_problem(exc)
        raise GateError(file, where, _message(first) + more) from None


def _message(error: Any) -> str:
    kinds = ", ".join(RULE_KINDS)
    if error["type"] == "union_tag_invalid":
        return f"unknown rule {error['input'].get('kind')!r}; valid rules: {kinds}"
    if error["type"] == "union_tag_not_found":
        return f"a rule is a single-key mapping such as `- pass_hat_k: {{k: 8, min: 0.25}}`; valid rules: {kinds}"
    if error["type"] == "extra_forbidden":
        model = _model_at(error["loc"][:-1])
        valid = f"; valid fields: {', '.join(f for f in model.model_fields if f != 'kind')}" if model else ""
        return "unknown field" + valid
    if error["type"] == "finite_number":  # checked before any bound, so a NaN is not "should be ≤ 1"
        value = error["input"]
        infinite = str(value).strip().lstrip("+-").lower() in ("inf", "infinity")
        return f"{'not a finite number' if infinite else 'not a number'} ({value!r}); expected a finite number"
    return str(error["msg"])


def _model_at(loc: tuple[Any, ...]) -> type[BaseModel] | None:
    """The model at a location inside ``GateFile`` (for the list of valid fields in an error)."""
    if not loc:
        return GateFile
    if loc[0] == "rules" and len(loc) >= 3 and loc[2] in RULE_KINDS:
        rest = loc[3:]
        if not rest:
            return RULE_KINDS[loc[2]]
        if rest == ("select",):
            return Selection
    return None
