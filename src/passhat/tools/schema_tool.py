"""Tools whose parameters are a JSON Schema someone else wrote: an upstream MCP server's ``tools/list``, a
benchmark's tool descriptions, a tool built at run time from a name, a schema and a callable.

:func:`schema_tool` is the public way to make one. The schema is checked once, when the tool is made, with a
real JSON Schema validator (``jsonschema``, imported lazily: ``pip install 'passhat[schema]'``; the ``mcp``
extra has it too); a schema that is not valid JSON Schema is bad input naming the tool. At every call the
arguments are checked against it: arguments that do not fit never reach the callable (the agent gets
``invalid_arguments`` with each problem's path), and those that fit reach it unchanged, as keyword arguments.
The agent sees the schema as given.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError, model_validator
from pydantic_core import InitErrorDetails, PydanticCustomError

from passhat.errors import DomainError
from passhat.tools.declare import Tool, ToolKind

ArgumentCheck = Callable[[Any], list[tuple[tuple[str | int, ...], str]]]
"""Checks one call's arguments: the problems as (path, message), empty when they fit."""


@dataclass(frozen=True)
class SchemaTool(Tool[..., Any]):
    """A tool whose parameter schema is given, not generated from a signature."""

    input_schema: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)
    """The JSON Schema of the arguments, as the agent sees it."""

    @property  # type: ignore[override]  # the schema as given, not one generated from type hints
    def parameters(self) -> dict[str, Any]:
        return self.input_schema


def schema_tool(name: str, parameters: Mapping[str, Any], func: Callable[..., Any], *, kind: ToolKind,
                description: str, check: ArgumentCheck | None = None, ends_episode: bool = False,
                idempotent: bool = False, external: bool = False) -> SchemaTool:
    """A tool named ``name`` whose arguments are the JSON Schema ``parameters`` (an object schema) and whose body
    is ``func(ctx, **arguments)`` (plain or ``async``; it raises :class:`~passhat.tools.ToolFailure` or
    :class:`~passhat.tools.PermissionDenied` as a ``@tool`` does). ``check`` replaces the JSON Schema check
    (a benchmark that checks less than its schema says); ``kind``, ``ends_episode``, ``idempotent`` and
    ``external`` mean what they mean for :func:`~passhat.tools.tool`. Raises :class:`DomainError` for a
    schema that is not a usable input schema."""
    where = f"tool {name!r}: parameters"
    validate = check if check is not None else argument_check(where, parameters)
    schema = dict(parameters)
    return SchemaTool(name=name, kind=kind, description=description or name, func=_spread(func),
                      arguments=argument_model(name, validate), external=external, ends_episode=ends_episode,
                      idempotent=idempotent, input_schema=schema)


def _spread(func: Callable[..., Any]) -> Callable[..., Any]:
    """The body the boundary calls with the checked arguments as one mapping, calling ``func`` with them spread."""
    if inspect.iscoroutinefunction(func):
        async def call_async(ctx: Any, arguments: dict[str, Any]) -> Any:
            return await func(ctx, **arguments)
        call_async.__name__ = call_async.__qualname__ = getattr(func, "__name__", "tool")
        return call_async

    def call(ctx: Any, arguments: dict[str, Any]) -> Any:
        return func(ctx, **arguments)
    call.__name__ = call.__qualname__ = getattr(func, "__name__", "tool")
    return call


def argument_model(tool: str, check: ArgumentCheck) -> type[BaseModel]:
    """The pydantic model the boundary validates a call's arguments with: it runs ``check`` and keeps the
    arguments as they came, in one field, ``arguments``, which the tool's body receives."""

    class Arguments(BaseModel):
        model_config = ConfigDict(extra="forbid")
        arguments: dict[str, Any]

        @model_validator(mode="before")
        @classmethod
        def _schema(cls, data: Any) -> dict[str, Any]:
            problems = check(data)
            if problems:
                raise ValidationError.from_exception_data(f"{tool}_arguments", [
                    InitErrorDetails(type=PydanticCustomError("json_schema", "{reason}", {"reason": message}),
                                     loc=path, input=data) for path, message in problems])
            return {"arguments": data}

    Arguments.__name__ = Arguments.__qualname__ = f"{tool}_arguments"
    return Arguments


def argument_check(where: str, schema: Any) -> ArgumentCheck:
    """A compiled checker for ``schema``; raises :class:`DomainError` naming ``where`` when it is not a usable
    input schema (not an object schema, not valid JSON Schema, a ``$ref`` that resolves nowhere)."""
    if not isinstance(schema, dict):
        raise DomainError(f"{where} is {type(schema).__name__}, not a JSON Schema object")
    if schema.get("type", "object") != "object":
        raise DomainError(f"{where}: type is {schema.get('type')!r}; tool arguments are an object "
                          "(\"type\": \"object\")")
    try:
        from jsonschema.exceptions import SchemaError
        from jsonschema.validators import validator_for
        from jsonschema_specifications import REGISTRY as METASCHEMAS
        from referencing import Registry, Resource
        from referencing.jsonschema import DRAFT202012
    except ImportError:
        raise DomainError(f"{where}: checking arguments against a JSON Schema needs the jsonschema package: "
                          "pip install 'passhat[schema]'") from None

    cls = validator_for(schema)
    try:
        cls.check_schema(schema)
    except SchemaError as exc:
        path = "/".join(str(p) for p in exc.absolute_path) or "(root)"
        raise DomainError(f"{where} is not a valid JSON Schema at {path}: {exc.message}") from None
    # an empty registry: a "$ref" resolves inside the schema or to the bundled metaschemas, never by download
    validator = cls(schema, registry=Registry())
    own = Resource.from_contents(schema, default_specification=DRAFT202012)
    resolver = METASCHEMAS.with_resource("", own).resolver()  # inside the schema, or a bundled metaschema
    for ref in _refs(schema):  # a "$ref" that resolves nowhere would surface only in the trial whose call uses it
        try:
            resolver.lookup(ref)
        except Exception as exc:  # referencing.exceptions.Unresolvable and kin
            raise DomainError(f"{where}: \"$ref\": {ref!r} resolves to nothing ({type(exc).__name__})") from None

    def check(arguments: Any) -> list[tuple[tuple[str | int, ...], str]]:
        errors = sorted(validator.iter_errors(arguments), key=lambda e: [str(p) for p in e.absolute_path])
        return [(tuple(e.absolute_path), e.message) for e in errors]

    return check


def _refs(node: Any) -> list[str]:
    """Every ``$ref`` in a schema, however deep."""
    if isinstance(node, dict):
        own = [node["$ref"]] if isinstance(node.get("$ref"), str) else []
        return own + [r for value in node.values() for r in _refs(value)]
    if isinstance(node, list):
        return [r for value in node for r in _refs(value)]
    return []
