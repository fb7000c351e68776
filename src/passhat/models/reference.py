"""Markdown references generated from pydantic models, so documentation and validation cannot drift.

A model is a table — each field's name, type, default and docstring — followed by a section for every model
its fields hold that is not documented elsewhere (a field whose type is a model never shows only the
model's name). ``cases.reference`` (docs/case-file.md) and ``runner.record_reference`` (docs/records.md)
are built from these.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Collection, Mapping
from typing import Any

from pydantic import BaseModel
from pydantic.fields import FieldInfo

TypeName = Callable[[Any], str]


def type_name(annotation: Any, aliases: Mapping[str, str] | None = None) -> str:
    """A field's type as the reference writes it: ``str | null``, ``list[Grade]`` (module paths dropped).
    ``aliases`` names a type by a word its text contains (``RowCount`` → ``list[assertion]``)."""
    for needle, name in (aliases or {}).items():
        if needle in str(annotation):
            return name
    text = getattr(annotation, "__name__", None) if not getattr(annotation, "__args__", None) else None
    text = text or str(annotation)
    text = re.sub(r"\b(typing|passhat\.[\w.]+)\.", "", text)
    return text.replace("NoneType", "null").replace("|", "\\|")


def default_text(info: FieldInfo) -> str:
    """``**required**``, or the default as JSON."""
    if info.is_required():
        return "**required**"
    if info.default_factory is not None:
        value = info.default_factory()  # type: ignore[call-arg]
        return "`" + json.dumps(value.model_dump() if isinstance(value, BaseModel) else value) + "`"
    return "`" + json.dumps(info.default, default=str) + "`"


def doc_text(obj: Any) -> str:
    """A model's docstring, or a field's description, on one line."""
    text = obj.__doc__ if isinstance(obj, type) else obj
    return " ".join((text or "").split())


def field_table(model: type[BaseModel], skip: Collection[str] = (), type_of: TypeName = type_name) -> list[str]:
    """The model's fields as a Markdown table (field, type, default, meaning)."""
    lines = ["| field | type | default | meaning |", "|---|---|---|---|"]
    for name, info in model.model_fields.items():
        if name in skip:
            continue
        meaning = doc_text(info.description).replace("|", "\\|")
        lines.append(f"| `{name}` | {type_of(info.annotation)} | {default_text(info)} | {meaning} |")
    return lines


def nested_models(annotation: Any) -> list[type[BaseModel]]:
    """The models a field's type holds (``list[RowScope]`` → RowScope)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [m for arg in getattr(annotation, "__args__", ()) for m in nested_models(arg)]


def nested_sections(title: str, model: type[BaseModel], level: str, seen: set[type[BaseModel]],
                    elsewhere: Collection[type[BaseModel]] = (), type_of: TypeName = type_name) -> list[str]:
    """A section for each model nested in ``model``'s fields, depth first, each once (``seen``); models in
    ``elsewhere`` have sections of their own. ``title.field[]`` names the path to it."""
    seen.add(model)
    out: list[str] = []
    for name, info in model.model_fields.items():
        for inner in nested_models(info.annotation):
            if inner in seen or inner in elsewhere:
                continue
            many = "[]" if "list[" in str(info.annotation) else ""
            sub = f"{title}.{name}{many}"
            out += [f"{level} `{sub}`", "", doc_text(inner), "", *field_table(inner, type_of=type_of), ""]
            out += nested_sections(sub, inner, level, seen, elsewhere, type_of)
    return out
