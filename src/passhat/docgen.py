"""Reference tables generated from pydantic models, so a file format's documentation cannot drift from the code
that validates it: the case file (cases/reference.py), the gate file (gate/reference.py) and the run options
(api/options.py) each embed one. A field's attribute docstring is its meaning."""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Mapping
from typing import Any

from pydantic import BaseModel


def type_text(annotation: Any, collapse: Mapping[str, str] | None = None) -> str:
    """A field's type as a reader writes it (``list[str]``, ``int \\| null``); a type whose text contains a key of
    ``collapse`` is shown as its value (a union of eighteen assertion models is ``list[assertion]``)."""
    for marker, shown in (collapse or {}).items():
        if marker in str(annotation):
            return shown
    text = getattr(annotation, "__name__", None) if not getattr(annotation, "__args__", None) else None
    text = re.sub(r"\b(typing|passhat\.[\w.]+|pathlib)\.", "", text or str(annotation))
    return text.replace("NoneType", "null").replace("|", "\\|")


def default_text(info: Any, *, only_changed: bool = False) -> str:
    """A field's default as JSON (``**required**`` without one); a model default shows its fields, or with
    ``only_changed`` those that differ from their own defaults."""
    if info.is_required():
        return "**required**"
    value = info.default_factory() if info.default_factory is not None else info.default
    if isinstance(value, BaseModel):
        value = value.model_dump(exclude_defaults=only_changed)
    return "`" + json.dumps(value, default=str, ensure_ascii=False) + "`"


def doc_text(model: type[BaseModel]) -> str:
    """The model's docstring on one line."""
    return " ".join((model.__doc__ or "").split())


def field_table(model: type[BaseModel], *, skip: tuple[str, ...] = (), only: tuple[str, ...] = (),
                collapse: Mapping[str, str] | None = None, only_changed: bool = False) -> list[str]:
    """A Markdown table of the model's fields: name, type, default, meaning (the field's docstring)."""
    lines = ["| field | type | default | meaning |", "|---|---|---|---|"]
    for name, info in model.model_fields.items():
        if name in skip or (only and name not in only):
            continue
        doc = " ".join((info.description or "").split()).replace("|", "\\|")
        lines.append(f"| `{name}` | {type_text(info.annotation, collapse)} | "
                     f"{default_text(info, only_changed=only_changed)} | {doc} |")
    return lines


def nested_models(annotation: Any) -> list[type[BaseModel]]:
    """The models a field's type holds (``list[RowScope]`` → RowScope), so their fields are documented too."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [m for arg in getattr(annotation, "__args__", ()) for m in nested_models(arg)]


def nested_sections(title: str, model: type[BaseModel], level: str, seen: set[type[BaseModel]], *,
                    elsewhere: Collection[type[BaseModel]] = (), collapse: Mapping[str, str] | None = None) -> list[str]:
    """A section for each model nested in ``model``'s fields, depth first, each once (``seen``), headed by its
    path (``title.field[]``): a field whose type is a model must never show only its type name (RowScope's
    fields were missing). Models in ``elsewhere`` have sections of their own."""
    seen.add(model)
    out: list[str] = []
    for name, info in model.model_fields.items():
        for inner in nested_models(info.annotation):
            if inner in seen or inner in elsewhere:
                continue
            many = "[]" if "list[" in str(info.annotation) else ""
            sub = f"{title}.{name}{many}"
            out += [f"{level} `{sub}`", "", doc_text(inner), "", *field_table(inner, collapse=collapse), ""]
            out += nested_sections(sub, inner, level, seen, elsewhere=elsewhere, collapse=collapse)
    return out
