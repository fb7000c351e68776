"""Toolkits: a class whose methods marked with ``@is_tool`` are tools, working on ``self.db``."""

import inspect
from collections.abc import Callable
from enum import StrEnum
from typing import Any

import docstring_parser
from pydantic import BaseModel, Field, create_model


class ToolType(StrEnum):
    READ = "read"
    WRITE = "write"
    GENERIC = "generic"


def is_tool(tool_type: ToolType = ToolType.READ):
    def mark(func: Callable) -> Callable:
        func.__tool__ = tool_type
        func.__mutates_state__ = tool_type == ToolType.WRITE
        return func

    return mark


class Tool:
    """A tool's schema as a model sees it, built from the method's signature and docstring."""

    def __init__(self, func: Callable) -> None:
        self.name = func.__name__
        doc = docstring_parser.parse(func.__doc__ or "")
        self.description = doc.short_description or self.name
        described = {p.arg_name: p.description for p in doc.params}
        fields = {}
        for name, param in inspect.signature(func).parameters.items():
            default = ... if param.default is param.empty else param.default
            fields[name] = (param.annotation, Field(default, description=described.get(name)))
        self.params = create_model("parameters", **fields)

    @property
    def openai_schema(self) -> dict:
        return {"type": "function", "function": {"name": self.name, "description": self.description,
                                                 "parameters": self.params.model_json_schema()}}


class ToolKitBase:
    def __init__(self, db: BaseModel | None = None) -> None:
        self.db = db

    @property
    def tools(self) -> dict[str, Callable]:
        return {name: getattr(self, name) for name, f in inspect.getmembers(type(self), inspect.isfunction)
                if hasattr(f, "__tool__")}

    def get_tools(self) -> dict[str, Tool]:
        return {name: Tool(f) for name, f in self.tools.items()}

    def has_tool(self, name: str) -> bool:
        return name in self.tools

    def tool_mutates_state(self, name: str) -> bool:
        return getattr(self.tools[name], "__mutates_state__", True)

    def use_tool(self, tool_name: str, **kwargs: Any) -> Any:
        if tool_name not in self.tools:
            raise ValueError(f"Tool '{tool_name}' not found.")
        return self.tools[tool_name](**kwargs)
