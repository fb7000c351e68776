"""Field docstrings for pydantic's ``use_attribute_docstrings``, read once per module instead of once per class.

Why: on Python < 3.13 pydantic finds each documented model's source by walking the stack, asking
``inspect.getmodule`` of every frame, and tokenizing the class's lines
(``pydantic._internal._docs_extraction``): ~1.5-2 ms a class. passhat defines ~70 documented models on the way to
its first trial, and that was 110-150 ms of the ~0.5 s of CPU before it (issue 21). Here a passhat module's source
is parsed once, and every class's field docstrings are collected from it with pydantic's own visitor, keyed by the
class's qualified name. A class this cannot place for certain (one defined in a function, a name defined twice,
a module without source) and every class outside passhat go to pydantic's own extractor, so a field's description
is pydantic's in every case (``tests/test_docstrings.py`` compares the two for every documented passhat model).

A module that defines documented models imports this one first (``import passhat._docstrings``), so the order
modules happen to be imported in never decides which extractor a class meets; without pydantic's function where
it is looked for (another pydantic), nothing is replaced.
"""

from __future__ import annotations

import ast
import sys
import tokenize
from collections.abc import Callable
from typing import Any

from pydantic._internal import _docs_extraction, _fields

_OURS = "passhat."
_modules: dict[str, dict[str, dict[str, str] | None]] = {}
"""Per module, per class qualified name, its field docstrings (None: the name is defined twice)."""


def collect(module: str) -> dict[str, dict[str, str] | None]:
    """Every class's field docstrings in ``module``'s source, by qualified name (classes at the top level and in
    class bodies; {} when the source cannot be read)."""
    path = getattr(sys.modules.get(module), "__file__", None)
    if not path or not path.endswith(".py"):
        return {}
    try:
        with tokenize.open(path) as f:
            tree = ast.parse(f.read(), path)
    except (OSError, SyntaxError, ValueError):
        return {}
    found: dict[str, dict[str, str] | None] = {}

    def walk(body: list[ast.stmt], prefix: str) -> None:
        for node in body:
            if isinstance(node, ast.ClassDef):
                name = prefix + node.name
                if name in found:
                    found[name] = None
                else:
                    visitor = _docs_extraction.DocstringVisitor()
                    visitor.generic_visit(node)  # as pydantic visits the class it parsed alone
                    found[name] = visitor.attrs
                walk(node.body, name + ".")

    walk(tree.body, "")
    return found


def _fast(original: Callable[..., dict[str, str]]) -> Callable[..., dict[str, str]]:
    def extract_docstrings_from_cls(cls: type[Any], use_inspect: bool = False) -> dict[str, str]:
        module, name = getattr(cls, "__module__", None) or "", getattr(cls, "__qualname__", "")
        if module.startswith(_OURS):  # a class made in a function ("<locals>" in its name) is never collected
            docs = _modules.get(module)
            if docs is None:
                docs = _modules[module] = collect(module)
            attrs = docs.get(name)
            if attrs is not None:
                return dict(attrs)
        return original(cls, use_inspect=use_inspect)

    extract_docstrings_from_cls.original = original  # type: ignore[attr-defined]
    return extract_docstrings_from_cls


if getattr(_fields, "extract_docstrings_from_cls", None) is _docs_extraction.extract_docstrings_from_cls:
    _fields.extract_docstrings_from_cls = _fast(_docs_extraction.extract_docstrings_from_cls)
