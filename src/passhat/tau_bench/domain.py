"""The passhat domain of one τ-bench environment, running τ-bench's own tool classes.

Each tool of the environment's ``ALL_TOOLS`` becomes a passhat tool with τ-bench's name, description
and parameter schema (what the agent sees is τ-bench's ``get_info()``). A call validates the arguments
against that schema's types, hands the class's ``invoke`` the trial's records as dicts (:mod:`.store`)
and writes back the records the call changed; its return value is the tool's result. So
the semantics are τ-bench's, the call is atomic like every passhat call, and the world diff, faults,
permissions and trajectory work as for any domain. The tools the environment's ``env.py`` lists as
``terminate_tools`` (``transfer_to_human_agents``) end the episode.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, create_model

from passhat.domain import Domain
from passhat.errors import DomainError
from passhat.tau_bench.checkout import Env, open_env
from passhat.tau_bench.store import JsonCollections
from passhat.tools import Tool, ToolContext
from passhat.tools.declare import ToolKind
from passhat.world import World

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

    def __init__(self, env: Env, store: JsonCollections, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.env = env
        self.store = store
        """The environment's data as the trial's tables and the tools' dicts."""

    def restore(self, fixture: str, seed: int) -> World:
        """A trial's world, the shared records' reset work done first (:meth:`JsonCollections.prepare`)."""
        self.store.prepare()
        return super().restore(fixture, seed)

    async def open_world(self, fixture: str, seed: int) -> World:
        """:meth:`restore` for the runner."""
        self.store.prepare()
        return await super().open_world(fixture, seed)

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
    store = JsonCollections(data, {name: str(source.folder / "data" / f"{name}.json") for name in data})
    ending = set(source.ending_tools())
    tools = [_tool(cls, store, ending) for cls in source.tool_classes()]
    return TauBenchDomain(source, store, name=f"tau-bench-{env}", schema=store.schema(),
                          fixtures={"default": store.load}, policy=source.policy(), tools=tools)


def _tool(cls: Any, store: JsonCollections, ending: set[str]) -> SchemaTool:
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
        given = {k: v for k, v in kwargs.items() if v is not None or k in required}
        return store.call(ctx.world, lambda data: cls.invoke(data=data, **given))

    call.__name__ = call.__qualname__ = name
    kind: ToolKind = "read" if name.startswith(READ_PREFIXES) else "write"
    return SchemaTool(name, kind, description, call, _arguments(name, schema), ends_episode=name in ending,
                      schema=schema)


def _arguments(name: str, schema: dict[str, Any]) -> type[BaseModel]:
    """A strict argument model with the schema's parameters and top-level types (the tool checks the rest)."""
    fields: dict[str, Any] = {}
    required = set(schema.get("required", []))
    for param, spec in (schema.get("properties") or {}).items():
        kind = JSON_TYPES.get(str(spec.get("type")), Any) if isinstance(spec, dict) else Any
        fields[param] = (kind, ...) if param in required else (kind | None, None)
    return create_model(f"{name}_arguments", __config__=ConfigDict(extra="forbid", strict=True), **fields)
