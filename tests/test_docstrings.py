"""passhat._docstrings: field docstrings read once per module give every documented model pydantic's own."""

from __future__ import annotations

import importlib
import pkgutil
import re
from pathlib import Path

from pydantic import BaseModel, ConfigDict
from pydantic._internal import _docs_extraction, _fields

import passhat
import passhat._docstrings as docstrings

SRC = Path(passhat.__file__).parent


def _documented_models() -> list[type[BaseModel]]:
    for info in pkgutil.walk_packages([str(SRC)], "passhat."):
        if info.name.endswith("__main__"):
            continue  # runs the CLI
        try:
            importlib.import_module(info.name)
        except ImportError:  # an optional extra that is not installed
            continue
    seen: list[type[BaseModel]] = []
    stack: list[type[BaseModel]] = [BaseModel]
    while stack:
        for sub in stack.pop().__subclasses__():
            stack.append(sub)
            if (sub.__module__.startswith("passhat.") and sub.model_config.get("use_attribute_docstrings")
                    and sub not in seen):
                seen.append(sub)
    return seen


def test_every_documented_model_gets_the_docstrings_pydantic_would_find() -> None:
    extract = _fields.extract_docstrings_from_cls
    original = _docs_extraction.extract_docstrings_from_cls
    assert extract is not original and getattr(extract, "original", None) is original  # installed
    models = _documented_models()
    placed = 0
    for cls in models:
        docs = docstrings.collect(cls.__module__).get(cls.__qualname__)
        if docs is None:
            continue  # not placed for certain: pydantic's own extractor answered
        placed += 1
        assert docs == original(cls, use_inspect=True), cls.__qualname__
        for name, info in cls.model_fields.items():  # and the models were built with them (an explicit one wins)
            if name in docs and "description" not in info._attributes_set:
                assert info.description == docs[name], f"{cls.__qualname__}.{name}"
    assert placed >= 60, f"only {placed} of {len(models)} documented models were checked"


def test_a_class_it_does_not_collect_still_gets_its_docstrings() -> None:
    """A documented model made in a function, outside passhat, is left to pydantic's own extractor."""

    def local() -> type[BaseModel]:
        class Inside(BaseModel):
            model_config = ConfigDict(use_attribute_docstrings=True)
            x: int = 0
            """The x."""
        return Inside

    made = local()
    assert "<locals>" in made.__qualname__ and not made.__module__.startswith("passhat.")
    assert made.model_fields["x"].description == "The x."


def test_every_module_with_documented_models_imports_it_first() -> None:
    lacking = [str(p.relative_to(SRC)) for p in SRC.rglob("*.py")
               if "use_attribute_docstrings=True" in (text := p.read_text())
               and p.name != "_docstrings.py" and not re.search(r"^import passhat\._docstrings\b", text, re.M)]
    assert not lacking, f"modules that define documented models without importing passhat._docstrings: {lacking}"
