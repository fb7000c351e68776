"""A user's τ-bench checkout: its environments, data files, policy, tool classes and tasks.

Tasks are read from the task files' syntax (``ast``), never executed: they are lists of literal
``Task(user_id=..., actions=[Action(name=..., kwargs=...)], instruction=..., outputs=[...])``. Tool
classes are imported from the checkout, each environment's ``tools`` package on its own: ``tau_bench``
and its ``envs`` packages are stood in for by bare packages during the import, so their ``__init__``
files (which import the user simulator, LLM clients and everything else) do not run, and the modules
are taken out of ``sys.modules`` again, so two checkouts never collide in one process.
"""

from __future__ import annotations

import ast
import importlib
import json
import sys
import threading
import types
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from passhat.errors import CaseError, DomainError
from passhat.imports import describe_failure
from passhat.inputs import check_depth, read_input_text, too_deep

ENVS = ("retail", "airline")
"""The environments of τ-bench, in the order they are imported."""
ENDING_TOOLS = ("transfer_to_human_agents",)
"""τ-bench's ``terminate_tools`` when an environment's ``env.py`` does not say."""
_IMPORT_LOCK = threading.Lock()


def not_a_checkout(path: Path) -> str:
    return (f"{path}: not a τ-bench checkout: expected tau_bench/envs/retail or tau_bench/envs/airline, each with "
            "data/*.json, tools/__init__.py and wiki.md (a clone of github.com/sierra-research/tau-bench; pass the "
            "folder that contains tau_bench/)")


@dataclass(frozen=True)
class Action:
    """One gold action of a task."""

    name: str
    kwargs: dict[str, Any]


@dataclass(frozen=True)
class Task:
    """One τ-bench task, as written in a task file."""

    index: int
    """Position in the task list (τ-bench's task id)."""
    line: int
    user_id: str
    instruction: str
    actions: list[Action] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Env:
    """One environment folder of a checkout: ``tau_bench/envs/NAME``."""

    checkout: Path
    name: str

    @property
    def folder(self) -> Path:
        return self.checkout / "tau_bench" / "envs" / self.name

    @property
    def data_files(self) -> list[Path]:
        return sorted((self.folder / "data").glob("*.json"))

    @property
    def tool_files(self) -> list[Path]:
        return sorted((self.folder / "tools").rglob("*.py"))

    def tasks_file(self, split: str) -> Path:
        return self.folder / f"tasks_{split}.py"

    def is_present(self) -> bool:
        return bool(self.data_files) and (self.folder / "tools" / "__init__.py").is_file()

    def read_data(self) -> dict[str, Any]:
        """``{collection: {key: record}}`` from ``data/*.json`` (the file stem names the collection)."""
        data: dict[str, Any] = {}
        for file in self.data_files:
            try:
                data[file.stem] = json.loads(read_input_text(file, "τ-bench data"))
            except ValueError as exc:
                raise DomainError(f"{file}: cannot read τ-bench data: {exc}") from exc
            except RecursionError:
                raise too_deep(str(file)) from None
            check_depth(data[file.stem], str(file))
        return data

    def policy(self) -> str:
        """The agent's policy: ``wiki.md``."""
        file = self.folder / "wiki.md"
        return read_input_text(file, "τ-bench policy")

    def ending_tools(self) -> tuple[str, ...]:
        """``self.terminate_tools = [...]`` in ``env.py``: the tools whose call ends the conversation."""
        file = self.folder / "env.py"
        if not file.is_file():
            return ENDING_TOOLS
        try:
            tree = ast.parse(read_input_text(file, "τ-bench env.py"), str(file))
        except (SyntaxError, RecursionError, MemoryError):  # what τ-bench itself would use when it cannot say
            return ENDING_TOOLS
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign) and "terminate_tools" in map(_target_name, node.targets):
                try:
                    return tuple(str(n) for n in ast.literal_eval(node.value))
                except ValueError:
                    break
        return ENDING_TOOLS

    def tool_classes(self) -> list[type]:
        """τ-bench's ``ALL_TOOLS`` of this environment, imported from the checkout."""
        package = f"tau_bench.envs.{self.name}.tools"
        where = self.folder / "tools" / "__init__.py"
        with _bare_packages(self.checkout / "tau_bench", self.name):
            try:
                module = importlib.import_module(package)
            except (Exception, SystemExit) as exc:
                raise DomainError(f"{where}: cannot import τ-bench's tools: {describe_failure(exc, where)}") from exc
        tools = getattr(module, "ALL_TOOLS", None)
        if not isinstance(tools, list | tuple) or not tools:
            raise DomainError(f"{where}: defines no ALL_TOOLS list of tool classes, as τ-bench's tools packages do")
        for cls in tools:
            if not callable(getattr(cls, "invoke", None)) or not callable(getattr(cls, "get_info", None)):
                raise DomainError(f"{where}: ALL_TOOLS: {getattr(cls, '__name__', cls)!r} is not a τ-bench tool "
                                  "(a class with invoke(data, **kwargs) and get_info())")
        return list(tools)


def _target_name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else None


@contextmanager
def _bare_packages(root: Path, env: str) -> Iterator[None]:
    """``tau_bench``, ``tau_bench.envs`` and ``tau_bench.envs.ENV`` as packages without their ``__init__``.

    Whatever ``tau_bench`` modules were loaded before are put back afterwards, and the ones this import
    loaded are removed (the tool classes keep their own modules alive).
    """
    with _IMPORT_LOCK:
        saved = {k: m for k, m in sys.modules.items() if k == "tau_bench" or k.startswith("tau_bench.")}
        for k in saved:
            del sys.modules[k]
        parent: types.ModuleType | None = None
        for name, folder in (("tau_bench", root), ("tau_bench.envs", root / "envs"),
                             (f"tau_bench.envs.{env}", root / "envs" / env)):
            module = types.ModuleType(name)
            module.__path__ = [str(folder)]
            sys.modules[name] = module
            if parent is not None:
                setattr(parent, name.rpartition(".")[2], module)
            parent = module
        importlib.invalidate_caches()
        try:
            yield
        finally:
            for k in [k for k in sys.modules if k == "tau_bench" or k.startswith("tau_bench.")]:
                del sys.modules[k]
            sys.modules.update(saved)


def find_envs(checkout: Path) -> list[Env]:
    """The environments present in ``checkout`` (retail, airline); a user error when there are none."""
    checkout = Path(checkout)
    if not checkout.is_dir():
        raise DomainError(f"{checkout}: not a folder; pass the folder of a τ-bench checkout (it contains tau_bench/)")
    envs = [Env(checkout.resolve(), name) for name in ENVS]
    present = [e for e in envs if e.is_present()]
    if not present:
        raise DomainError(not_a_checkout(checkout))
    return present


def open_env(checkout: str | Path, name: str) -> Env:
    """One environment of a checkout, for a suite's domain (a clear error if it moved or changed)."""
    env = Env(Path(checkout).resolve(), name)
    if not env.is_present():
        raise DomainError(f"{env.folder}: no τ-bench {name} environment here (data/*.json and tools/__init__.py); "
                          "if the checkout moved, change the path in the suite's domain.py")
    return env


def read_tasks(file: Path) -> list[Task]:
    """The tasks of a τ-bench task file (``TASKS_TEST = [Task(...), ...]``), read without running it."""
    text = read_input_text(file, "τ-bench task")  # a regular file within the size cap (passhat/inputs.py)
    try:
        tree = ast.parse(text, str(file))
    except SyntaxError as exc:
        raise CaseError(str(file), f"line {exc.lineno}", f"not valid Python: {exc.msg}") from None
    except (RecursionError, MemoryError):  # the parser's stack: nesting no task file has
        raise too_deep(str(file)) from None
    lists = [n.value for n in tree.body if isinstance(n, ast.Assign | ast.AnnAssign) and isinstance(n.value, ast.List)]
    if not lists:
        raise CaseError(str(file), "", "no task list (a top-level `TASKS = [Task(...), ...]`)")
    return [_task(file, i, node) for i, node in enumerate(lists[0].elts)]


def _task(file: Path, index: int, node: ast.expr) -> Task:
    where = f"task {index} (line {node.lineno})"
    fields = _fields(file, where, node, "Task")
    actions = []
    for j, item in enumerate(fields.get("actions") or []):
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            raise CaseError(str(file), f"{where}: actions[{j}]", "an action is Action(name=..., kwargs={...})")
        kwargs = item.get("kwargs", item.get("arguments", {}))
        if not isinstance(kwargs, dict):
            raise CaseError(str(file), f"{where}: actions[{j}]: kwargs", "the arguments are a dict")
        actions.append(Action(item["name"], kwargs))
    user_id, instruction, outputs = fields.get("user_id"), fields.get("instruction"), fields.get("outputs") or []
    if not isinstance(user_id, str) or not isinstance(instruction, str):
        raise CaseError(str(file), where, "a task needs user_id and instruction as strings")
    if not isinstance(outputs, list) or not all(isinstance(o, str) for o in outputs):
        raise CaseError(str(file), f"{where}: outputs", "outputs is a list of strings")
    return Task(index, node.lineno, user_id, instruction, actions, outputs)


def _fields(file: Path, where: str, node: ast.expr, kind: str) -> dict[str, Any]:
    value = _literal(file, where, node)
    if not isinstance(value, dict):
        raise CaseError(str(file), where, f"expected {kind}(...) or a dict")
    return value


def _literal(file: Path, where: str, node: ast.expr) -> Any:
    """A literal, where ``Task(...)``/``Action(...)`` calls with keyword arguments read as dicts."""
    if isinstance(node, ast.Call) and _target_name(node.func) in ("Task", "Action"):
        if node.args:
            raise CaseError(str(file), f"{where}, line {node.lineno}", "give Task/Action fields as keywords")
        return {kw.arg: _literal(file, where, kw.value) for kw in node.keywords if kw.arg is not None}
    if isinstance(node, ast.List | ast.Tuple):
        return [_literal(file, where, e) for e in node.elts]
    if isinstance(node, ast.Dict):
        return {_literal(file, where, k) if k is not None else None: _literal(file, where, v)
                for k, v in zip(node.keys, node.values, strict=True)}
    try:
        return ast.literal_eval(node)
    except ValueError:
        raise CaseError(str(file), f"{where}, line {node.lineno}",
                        f"not a literal value: {ast.unparse(node)[:80]!r} (task files are read, not run)") from None
