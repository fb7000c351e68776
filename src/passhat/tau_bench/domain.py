"""The passhat domain of one τ-bench environment, running τ-bench's own tool classes.

Each tool of the environment's ``ALL_TOOLS`` becomes a passhat tool with τ-bench's name, description
and parameter schema (what the agent sees is τ-bench's ``get_info()``). A call validates the arguments
against that schema's types, hands the class's ``invoke`` a dict-like view of the trial's world
(:mod:`.tables`) and writes back whatever the call changed; its return value is the tool's result. So
the semantics are τ-bench's, the call is atomic like every passhat call, and the world diff, faults,
permissions and trajectory work as for any domain. The tools the environment's ``env.py`` lists as
``terminate_tools`` (``transfer_to_human_agents``) end the episode.
"""

from __future__ import annotations

import hashlib
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, create_model

from passhat.domain import Domain
from passhat.errors import DomainError
from passhat.tau_bench.checkout import Env, open_env
from passhat.tau_bench.tables import Layout, views
from passhat.tools import Tool, ToolContext

READ_PREFIXES = ("get_", "find_", "list_", "search_", "sort_", "calculate", "think", "transfer_to_")
"""τ-bench does not mark tools as reading or writing; these names read (everything else counts as a write)."""
JSON_TYPES: dict[str, Any] = {"string": str, "integer": int, "number": int | float, "boolean": bool,
                              "array": list[Any], "object": dict[str, Any]}


@dataclass(frozen=True)
class SchemaTool(Tool):
    """A tool whose parameter schema is given (τ-bench's ``get_info()``), not generated from a signature."""

    schema: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)

    @property  # type: ignore[override]
    def parameters(self) -> dict[str, Any]:
        return self.schema


class TauBenchDomain(Domain):
    """A domain whose tools and data live in a τ-bench checkout: both are part of its content hash."""

    def __init__(self, env: Env, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.env = env

    def content_hash(self) -> str:
        h = hashlib.sha256(super().content_hash().encode())
        for file in (*self.env.data_files, *self.env.tool_files):
            h.update(str(file.relative_to(self.env.folder)).encode())
            h.update(file.read_bytes())
        return h.hexdigest()


def tau_bench_domain(checkout: str | Path, env: str) -> TauBenchDomain:
    """The domain of environment ``env`` (``retail``, ``airline``) of the τ-bench checkout at ``checkout``.

    Imports the environment's tool classes and reads its data and policy now; the fixture (every
    collection as a table) is built when a run first needs it.
    """
    source = open_env(checkout, env)
    data = source.read_data()
    layouts = {name: Layout.of(name, records, str(source.folder / "data" / f"{name}.json"))
               for name, records in data.items()}
    ending = set(source.ending_tools())
    tools = [_tool(cls, layouts, ending) for cls in source.tool_classes()]

    def load(db: sqlite3.Connection) -> None:
        for name, layout in layouts.items():
            layout.insert(db, [layout.encode(key, record) for key, record in data[name].items()])

    return TauBenchDomain(
        source, name=f"tau-bench-{env}", schema="\n".join(layout.schema() for layout in layouts.values()),
        fixtures={"default": load}, policy=source.policy(), tools=tools)


def _tool(cls: Any, layouts: dict[str, Layout], ending: set[str]) -> SchemaTool:
    try:
        info = cls.get_info()["function"]
        name, description = str(info["name"]), str(info.get("description") or info["name"])
        schema = dict(info.get("parameters") or {"type": "object", "properties": {}})
    except (Exception, SystemExit) as exc:
        raise DomainError(f"τ-bench tool {getattr(cls, '__name__', cls)!r}: get_info() does not describe a function "
                          f"({type(exc).__name__}: {exc})") from exc
    schema.setdefault("required", [])
    required = set(schema["required"])

    def call(ctx: ToolContext, **kwargs: Any) -> Any:
        data = views(ctx.db, layouts)
        given = {k: v for k, v in kwargs.items() if v is not None or k in required}
        result = cls.invoke(data=data, **given)
        for view in data.values():
            view.write_back()
        return result

    call.__name__ = call.__qualname__ = name
    kind = "read" if name.startswith(READ_PREFIXES) else "write"
    return SchemaTool(name, kind, description, call, _arguments(name, schema), ends_episode=name in ending,
                      schema=schema)


def _arguments(name: str, schema: dict[str, Any]) -> type[BaseModel]:
    """A strict argument model with the schema's parameters and top-level types (the tool checks the rest)."""
    fields: dict[str, Any] = {}
    required = set(schema.get("required", []))
    for param, spec in (schema.get("properties") or {}).items():
        kind = JSON_TYPES.get(spec.get("type"), Any) if isinstance(spec, dict) else Any
        fields[param] = (kind, ...) if param in required else (kind | None, None)
    return create_model(f"{name}_arguments", __config__=ConfigDict(extra="forbid", strict=True), **fields)
