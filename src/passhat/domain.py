"""A domain: a sandboxed business system (schema, fixtures, policy, tools) and its own graders.

A domain is plain data plus declared tools. It never touches anything real: payment adapters record
intent, email goes to a sink table, and all state lives in the trial's SQLite world. Checks its cases
need beyond the built-in assertions are graders declared with ``@grader`` and registered here, so a
suite stays self-contained and its hash covers them.
"""

from __future__ import annotations

import hashlib
import importlib
import inspect
import json
import sqlite3
from collections.abc import Callable, Iterable
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from passhat.errors import DomainError
from passhat.imports import import_file
from passhat.tools import Tool
from passhat.validation import load_yaml
from passhat.world import FixtureImage
from passhat.world.image import insert_rows

if TYPE_CHECKING:  # passhat.graders imports passhat.cases, which imports this module
    from passhat.graders.declare import CustomGrader

FixtureSource = Path | Callable[[sqlite3.Connection], None]


class Domain:
    """Schema, named fixtures, policy text and tools of one sandboxed system."""

    def __init__(
        self,
        name: str,
        *,
        schema: str | Path,
        fixtures: dict[str, FixtureSource],
        policy: str | Path,
        tools: Iterable[Tool],
        graders: Iterable[CustomGrader] = (),
        start: datetime | None = None,
    ) -> None:
        self.name = name
        self.schema_sql = schema.read_text("utf-8") if isinstance(schema, Path) else schema
        self.fixtures = dict(fixtures)
        self.policy = policy.read_text("utf-8") if isinstance(policy, Path) else policy
        self.tools = {t.name: t for t in tools}
        self.graders = _graders(name, graders)
        self.start = start or datetime(2026, 1, 1, 9, 0, 0)
        self._images: dict[str, FixtureImage] = {}
        self._schema_hash: str | None = None

    def tool_list(self) -> list[Tool]:
        return list(self.tools.values())

    def image(self, fixture: str) -> FixtureImage:
        """The fixture's image, built on first use and cached for the rest of the run."""
        if fixture not in self._images:
            if fixture not in self.fixtures:
                raise DomainError(f"domain {self.name!r} has no fixture {fixture!r}; fixtures: {sorted(self.fixtures)}")
            source = self.fixtures[fixture]
            loader, start = _loader(source, self.start)
            self._images[fixture] = FixtureImage.build(fixture, self.schema_sql, loader, start)
        return self._images[fixture]

    def tool_schema_hash(self) -> str:
        """Hash of the tool specs an agent sees (names, kinds, descriptions, parameter schemas), for traces."""
        if self._schema_hash is None:
            specs = [self.tools[name].spec() for name in sorted(self.tools)]
            self._schema_hash = hashlib.sha256(json.dumps(specs, sort_keys=True).encode()).hexdigest()[:16]
        return self._schema_hash

    def content_hash(self) -> str:
        """Hash of everything that defines the domain: schema, policy, fixture files, tool and grader source."""
        h = hashlib.sha256()
        h.update(self.schema_sql.encode())
        h.update(self.policy.encode())
        for name in sorted(self.fixtures):
            src = self.fixtures[name]
            h.update(name.encode())
            h.update(src.read_bytes() if isinstance(src, Path) else _source(src).encode())
        for name in sorted(self.tools):
            t = self.tools[name]
            h.update(f"{name}:{t.kind}:{t.external}".encode())
            h.update(_source(t.func).encode())
        for name in sorted(self.graders):  # absent without graders: older domains keep their hash
            g = self.graders[name]
            h.update(f"grader {name}:{g.kind}".encode())
            h.update(_source(g.func).encode())
        return h.hexdigest()


def _graders(domain: str, graders: Iterable[Any]) -> dict[str, CustomGrader]:
    """Graders by name; each declared with ``@grader``, no name twice."""
    from passhat.graders.declare import CustomGrader  # here, not at import: see TYPE_CHECKING above

    out: dict[str, CustomGrader] = {}
    for g in graders:
        if not isinstance(g, CustomGrader):
            what = getattr(g, "__name__", repr(g))
            raise DomainError(f"domain {domain!r}: graders: {what} is not a declared grader; "
                              "decorate it with @grader(kind=...) from passhat.graders")
        if g.name in out:
            raise DomainError(f"domain {domain!r}: two graders are named {g.name!r}")
        out[g.name] = g
    return out


def _source(obj: Any) -> str:
    try:
        return inspect.getsource(obj)
    except (OSError, TypeError):
        return repr(obj)


def _loader(source: FixtureSource, default_start: datetime) -> tuple[Callable[[sqlite3.Connection], None], datetime]:
    if callable(source) and not isinstance(source, Path):
        return source, default_start
    path = Path(source)
    try:
        data = load_yaml(path.read_text("utf-8")) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise DomainError(f"{path}: cannot read fixture: {exc}") from exc
    if not isinstance(data, dict) or not isinstance(data.get("tables", {}), dict):
        raise DomainError(f"{path}: a fixture is a mapping with `now` (ISO time) and `tables: {{table: [rows]}}`")
    start = default_start
    if "now" in data:
        start = data["now"] if isinstance(data["now"], datetime) else datetime.fromisoformat(str(data["now"]))
    tables = data.get("tables", {})
    return (lambda conn: insert_rows(conn, tables, str(path))), start


BUILTIN_DOMAINS = ("reimbursement", "refunds")


def load_domain(ref: str, base: Path | None = None) -> Domain:
    """Resolve a domain reference: a built-in name, ``package.module:attr``, or a path to a ``.py`` file.

    A module or file must define ``domain`` (a :class:`Domain`) unless ``:attr`` names another attribute.
    """
    if ref in BUILTIN_DOMAINS:
        module = importlib.import_module(f"passhat.domains.{ref}")
        return _domain_attr(module, "domain", ref)
    target, _, attr = ref.partition(":")
    path = Path(target) if base is None else (base / target)
    if target.endswith(".py") or path.is_dir():
        file = path / "domain.py" if path.is_dir() else path
        if not file.exists():
            raise DomainError(f"domain {ref!r}: file {file} does not exist")
        try:
            module = import_file(file, "domain")
        except ImportError as exc:
            raise DomainError(f"domain {ref!r}: cannot import {file}: {exc}") from exc
        return _domain_attr(module, attr or "domain", ref)
    try:
        module = importlib.import_module(target)
    except ImportError as exc:
        raise DomainError(
            f"unknown domain {ref!r}: not a built-in ({', '.join(BUILTIN_DOMAINS)}), "
            f"an importable module:attr, or a .py file ({exc})"
        ) from exc
    return _domain_attr(module, attr or "domain", ref)


def _domain_attr(module: Any, attr: str, ref: str) -> Domain:
    value = getattr(module, attr, None)
    if not isinstance(value, Domain):
        raise DomainError(f"domain {ref!r}: {module.__name__}.{attr} is not a passhat Domain")
    return value
