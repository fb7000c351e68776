"""Tools declared once: a typed, documented Python function is the single source of truth.

τ-bench kept one class per tool with a hand-written JSON Schema beside it, and they drifted apart.
Here the parameters' JSON Schema is generated from the type hints, and the descriptions from the
docstring (summary and ``Args:`` section). Each tool says whether it reads or writes.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, ParamSpec, TypeVar, get_type_hints, overload

import docstring_parser
from pydantic import BaseModel, ConfigDict, Field, create_model

from passhat.tools.result_fields import declared_fields

ToolKind = Literal["read", "write"]
P = ParamSpec("P")
R = TypeVar("R")


@dataclass(frozen=True)
class Tool(Generic[P, R]):
    """A declared tool: its function, argument model and metadata. ``Tool[P, R]`` keeps the function's type:
    calling the tool calls the function (``get_order(ctx, order_id=4812)`` in a test), type-checked as it."""

    name: str
    kind: ToolKind
    description: str
    func: Callable[P, R]
    arguments: type[BaseModel]
    external: bool = False
    tags: tuple[str, ...] = field(default=())
    ends_episode: bool = False
    """Calling it (successfully) ends the conversation, as a transfer to a human does: later calls are
    refused and recorded, the user is gone, and an agent running elsewhere is stopped."""
    idempotent: bool = False
    """Calling it twice with the same arguments does what calling it once does (writing a file, running
    the tests): a repeat is never counted as a duplicate write."""
    remote: bool = False
    """Served by a process of its own (an upstream MCP server), which commits on its own: the world's
    per-call scope (a savepoint, a transaction on the native connection) does not wrap it."""

    @functools.cached_property
    def parameters(self) -> dict[str, Any]:
        """JSON Schema of the arguments (an object schema, as model APIs expect). Computed once: building
        it costs about a millisecond per tool, and model agents send every tool's schema on every call."""
        schema = self.arguments.model_json_schema()
        schema.pop("title", None)
        for prop in schema.get("properties", {}).values():
            prop.pop("title", None)
        schema.setdefault("required", [])
        return schema

    @functools.cached_property
    def result_fields(self) -> frozenset[str] | None:
        """Every field name the tool's result can hold, from its return annotation (a ``TypedDict``, pydantic
        model or dataclass, or lists and unions of them); ``None`` when the annotation leaves the names open
        (``dict``, ``list[dict]``, ``Any``). A ``malformed`` fault on a field outside it is bad input."""
        return declared_fields(self.func)

    def spec(self) -> dict[str, Any]:
        """A provider-neutral description: name, description, parameters, kind."""
        return {"name": self.name, "description": self.description, "parameters": self.parameters, "kind": self.kind}

    def openai_spec(self) -> dict[str, Any]:
        """The tool in the OpenAI chat-completions ``tools`` format."""
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": self.parameters},
        }

    @functools.cached_property
    def is_async(self) -> bool:
        """The function is a coroutine function (asked on every call: computed once)."""
        return inspect.iscoroutinefunction(self.func)

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        """The function itself, outside the tool boundary (no validation, faults or record): for tests."""
        return self.func(*args, **kwargs)


def _argument_model(func: Callable[..., Any], name: str, doc: docstring_parser.Docstring) -> type[BaseModel]:
    hints = get_type_hints(func)
    params = list(inspect.signature(func).parameters.values())
    if not params or params[0].name not in ("ctx", "context"):
        raise TypeError(f"tool {name!r}: the first parameter must be `ctx: ToolContext`")
    described = {p.arg_name: (p.description or "") for p in doc.params}
    fields: dict[str, Any] = {}
    for p in params[1:]:
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            raise TypeError(f"tool {name!r}: *args/**kwargs cannot be described to a model")
        if p.name not in hints:
            raise TypeError(f"tool {name!r}: parameter {p.name!r} needs a type hint")
        if p.name not in described or not described[p.name]:
            raise TypeError(f"tool {name!r}: parameter {p.name!r} needs a description in the docstring's Args:")
        default = ... if p.default is p.empty else p.default
        fields[p.name] = (hints[p.name], Field(default, description=described[p.name]))
    # strict: the JSON an agent sends must already have the declared types ("118.5" is not a number)
    config = ConfigDict(extra="forbid", strict=True)
    return create_model(f"{name}_arguments", __config__=config, **fields)


@overload
def tool(func: Callable[P, R], *, kind: ToolKind, name: str | None = None, external: bool = False,
         ends_episode: bool = False, idempotent: bool = False) -> Tool[P, R]: ...


@overload
def tool(func: None = None, *, kind: ToolKind, name: str | None = None, external: bool = False,
         ends_episode: bool = False, idempotent: bool = False) -> Callable[[Callable[P, R]], Tool[P, R]]: ...


def tool(
    func: Callable[P, R] | None = None,
    *,
    kind: ToolKind,
    name: str | None = None,
    external: bool = False,
    ends_episode: bool = False,
    idempotent: bool = False,
) -> Tool[P, R] | Callable[[Callable[P, R]], Tool[P, R]]:
    """Declare a tool. Use as ``@tool(kind="read")``.

    The function's first parameter receives the :class:`~passhat.tools.context.ToolContext`; every
    other parameter needs a type hint and a line in the docstring's ``Args:`` section.
    ``ends_episode=True`` marks a tool whose successful call ends the trial (e.g. ``transfer_to_human``).
    ``idempotent=True`` marks a write whose repeat with the same arguments changes nothing more (failure
    attribution then never calls a repeat a duplicate write). The result is a :class:`Tool` of the
    function's own type. A tool whose parameters are a JSON Schema rather than type hints is made with
    :func:`~passhat.tools.schema_tool.schema_tool`.
    """

    def wrap(f: Callable[P, R]) -> Tool[P, R]:
        tool_name = name or f.__name__
        doc = docstring_parser.parse(inspect.getdoc(f) or "")
        description = "\n\n".join(x for x in (doc.short_description, doc.long_description) if x)
        if not description:
            raise TypeError(f"tool {tool_name!r}: a docstring describing the tool is required")
        if kind not in ("read", "write"):
            raise TypeError(f"tool {tool_name!r}: kind must be 'read' or 'write', not {kind!r}")
        return Tool(tool_name, kind, description, f, _argument_model(f, tool_name, doc), external,
                    ends_episode=ends_episode, idempotent=idempotent)

    return wrap(func) if func is not None else wrap
