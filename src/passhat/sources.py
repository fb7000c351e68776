"""Which source files a domain's code comes from: its module and the local modules it imports.

A domain's tools may live in ``helpers.py`` beside it; a hash of the tool functions' own source would
not change when a rule in ``helpers`` does, while verdicts would. So the domain hash covers every
``.py`` file under the domain's folder that its module imports, directly or through another such file.

The imports are read from the source (``ast``), not from ``sys.modules``: what a module imports does
not depend on what happened to be imported before it (an agent file in the same folder, a test module,
a second load served from Python's module cache), so the same files give the same hash in any process.
Imports written as a string (``importlib.import_module("x")``) are followed when the name is a literal;
a computed name is not, nor is anything outside the folder (docs/design/014).
"""

from __future__ import annotations

import ast
import inspect
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from passhat.imports import is_user_file


@dataclass(frozen=True)
class CodeRoot:
    """Where a domain's code starts (``entry``), the folder it may pull local files from, and where
    absolute module names are looked up (``bases``: the folders on ``sys.path`` it was imported from)."""

    entry: Path
    folder: Path
    bases: tuple[Path, ...]

    @classmethod
    def of_module(cls, module: ModuleType) -> CodeRoot | None:
        """The root of a loaded module: its folder; absolute names resolve there and at its ``sys.path`` entry."""
        file = getattr(module, "__file__", None)
        if not file:
            return None
        entry = Path(file).resolve()
        bases = [entry.parent]
        if not module.__name__.startswith("passhat_user_"):  # files imported by path are their folder's
            depth = module.__name__.count(".") + (entry.name == "__init__.py")
            if depth < len(entry.parents):
                bases.append(entry.parents[depth])
        return cls(entry, entry.parent, tuple(dict.fromkeys(bases)))

    @classmethod
    def of_file(cls, file: Path) -> CodeRoot:
        entry = file.resolve()
        return cls(entry, entry.parent, (entry.parent,))


def local_files(root: CodeRoot) -> list[Path]:
    """``root.entry`` and every ``.py`` file under ``root.folder`` it imports, directly or not, sorted."""
    seen: set[Path] = set()
    todo = [root.entry]
    while todo:
        file = todo.pop()
        if file in seen:
            continue
        seen.add(file)
        todo += [f for f in imported_files(file, root.bases) if f.is_relative_to(root.folder) and f not in seen]
    return sorted(seen)


def imported_files(file: Path, bases: Sequence[Path]) -> Iterator[Path]:
    """The existing files that the import statements of ``file`` would execute, looked up in ``bases``
    (or, for relative imports, from the file's own package folder)."""
    try:
        tree = ast.parse(file.read_bytes(), str(file))
    except (OSError, SyntaxError, ValueError):
        return
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield from _module_files(alias.name.split("."), bases)
        elif isinstance(node, ast.ImportFrom):
            starts: Sequence[Path] = bases
            if node.level:
                starts = [file.parents[node.level - 1]] if node.level <= len(file.parents) else []
            parts = node.module.split(".") if node.module else []
            yield from _module_files(parts, starts)
            for alias in node.names:  # `from pkg import name`: name may be a submodule
                if alias.name != "*":
                    yield from _module_files([*parts, alias.name], starts)
        elif isinstance(node, ast.Call) and _names_a_module(node):
            yield from _module_files(node.args[0].value.split("."), bases)  # type: ignore[attr-defined]


def _names_a_module(call: ast.Call) -> bool:
    """``importlib.import_module("literal")`` or ``__import__("literal")``."""
    func = call.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    return (name in ("import_module", "__import__") and bool(call.args) and isinstance(call.args[0], ast.Constant)
            and isinstance(call.args[0].value, str))


def _module_files(parts: list[str], starts: Sequence[Path]) -> Iterator[Path]:
    """The package ``__init__.py`` files and the module file that importing ``a.b.c`` runs, where they exist."""
    for start in starts:
        for i in range(1, len(parts) + 1):
            stem = start.joinpath(*parts[:i])
            for candidate in (stem / "__init__.py", stem.with_name(stem.name + ".py")):
                if candidate.is_file():
                    yield candidate.resolve()
        if not parts and (start / "__init__.py").is_file():
            yield (start / "__init__.py").resolve()


def defining_file(obj: object) -> Path | None:
    """The user file a function was defined in (``None`` for passhat's, the standard library's, site-packages')."""
    file = None
    for candidate in (obj, type(obj)):  # a callable object: the file of its class
        try:
            file = inspect.getsourcefile(candidate)  # type: ignore[arg-type]
            break
        except TypeError:
            continue
    if not file or not is_user_file(file):
        return None
    path = Path(file)
    return path.resolve() if path.is_file() else None
