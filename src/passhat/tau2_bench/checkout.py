"""A user's τ²-bench checkout: its domains, their code, data, tasks and splits.

A checkout holds the code under ``src/tau2`` and the data under ``data/tau2/domains/NAME`` (the database,
the policy, ``tasks.json`` and ``split_tasks.json``). Tasks are read as JSON and checked here, field by
field, so a malformed task file is a one-line error naming the task and the field. τ²'s code is imported
from the checkout, each domain's ``environment`` module with what it imports: ``tau2`` itself is stood in
for by a bare package (its ``__init__`` imports the agents, LLM clients and runner), the import runs with
``TAU2_DATA_DIR`` pointing at the checkout's data, and afterwards ``sys.modules`` and ``os.environ`` are
put back as they were (τ²'s ``tau2.utils`` reads a ``.env`` file when it is imported), so two checkouts
never share modules and nothing of τ²'s settings leaks into the run.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import threading
import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from passhat.errors import CaseError, DomainError
from passhat.imports import describe_failure
from passhat.inputs import check_depth, read_input_text, too_deep

DOMAINS = ("retail", "airline", "telecom")
"""The domains of τ²-bench this importer knows, in the order they are imported."""
RewardType = Literal["DB", "ENV_ASSERTION", "NL_ASSERTION", "ACTION", "COMMUNICATE"]
REWARD_TYPES: tuple[RewardType, ...] = ("DB", "ENV_ASSERTION", "NL_ASSERTION", "ACTION", "COMMUNICATE")
DEFAULT_BASIS: tuple[RewardType, ...] = ("DB", "COMMUNICATE")
"""τ²'s ``EvaluationCriteria.reward_basis`` when a task does not give one."""
Requestor = Literal["assistant", "user"]
REQUIREMENTS = "loguru deepdiff python-dotenv addict toml"
"""What τ²'s domain code imports beyond what passhat has (``pip install 'passhat[tau2]'`` installs them)."""
_IMPORT_LOCK = threading.Lock()


def not_a_checkout(path: Path) -> str:
    return (f"{path}: not a τ²-bench checkout: expected src/tau2/domains/NAME/environment.py and "
            f"data/tau2/domains/NAME/tasks.json for NAME in {', '.join(DOMAINS)} (a clone of "
            "github.com/sierra-research/tau2-bench; pass the folder that contains src/ and data/)")


@dataclass(frozen=True)
class GoldAction:
    """One action of a task's ``evaluation_criteria.actions``: a call of the agent's or the user's tool."""

    action_id: str
    name: str
    arguments: dict[str, Any]
    requestor: Requestor = "assistant"
    compare_args: list[str] | None = None
    """τ²'s action check compares only these arguments (``None``: every argument the call gives)."""


@dataclass(frozen=True)
class EnvCall:
    """One ``initialization_actions`` entry or ``env_assertions`` entry: a function of a toolkit."""

    env_type: Requestor
    func_name: str
    arguments: dict[str, Any]
    assert_value: bool = True
    message: str | None = None


@dataclass(frozen=True)
class Task:
    """One τ² task as its file gives it, checked."""

    index: int
    """Position in the task file."""
    id: str
    raw: dict[str, Any] = field(repr=False)
    """The task as read: τ²'s own ``Task`` model is built from it where τ²'s code needs one."""
    purpose: str
    actions: list[GoldAction] | None
    """``None``: the task gives no actions (τ² then has no database check); ``[]``: nothing may change."""
    env_assertions: list[EnvCall]
    communicate_info: list[str]
    nl_assertions: list[str]
    reward_basis: tuple[RewardType, ...]
    setup: list[EnvCall]
    """``initial_state.initialization_actions``."""
    has_initial_state: bool
    """The task changes the domain's database before the conversation (initialization data or actions)."""
    graded: bool = True
    """``False`` when the task has no ``evaluation_criteria``: τ² rewards every trial with 1."""


@dataclass(frozen=True)
class Tau2Code:
    """What passhat uses of τ²'s code for one domain."""

    get_environment: Callable[..., Any]
    """The domain's ``get_environment()``: a fresh ``Environment`` with its toolkits on the checkout's data."""
    task_model: Any
    """``tau2.data_model.tasks.Task`` (a pydantic model class)."""


@dataclass(frozen=True)
class Tau2Env:
    """One domain of a checkout: ``src/tau2/domains/NAME`` and ``data/tau2/domains/NAME``."""

    checkout: Path
    name: str

    @property
    def src(self) -> Path:
        return self.checkout / "src"

    @property
    def code_folder(self) -> Path:
        return self.src / "tau2" / "domains" / self.name

    @property
    def data_folder(self) -> Path:
        return self.checkout / "data" / "tau2" / "domains" / self.name

    @property
    def tasks_file(self) -> Path:
        return self.data_folder / "tasks.json"

    @property
    def split_file(self) -> Path:
        return self.data_folder / "split_tasks.json"

    def is_present(self) -> bool:
        return (self.code_folder / "environment.py").is_file() and self.tasks_file.is_file()

    def hashed_files(self) -> list[Path]:
        """The code and data the domain's verdicts depend on: the domain's code and data, and the shared
        environment code its toolkits and databases are built on."""
        shared = self.src / "tau2"
        code = [*sorted(self.code_folder.rglob("*.py")), *sorted((shared / "environment").glob("*.py")),
                *sorted((shared / "utils").glob("*.py")), shared / "data_model" / "tasks.py"]
        data = sorted(p for p in self.data_folder.iterdir() if p.is_file())
        return [p for p in (*code, *data) if p.is_file()]

    def splits(self) -> dict[str, list[str]]:
        """``split_tasks.json``: split name → task ids (``{}`` when the file is missing)."""
        if not self.split_file.is_file():
            return {}
        data = _read_json(self.split_file, "τ² task split")
        if not isinstance(data, dict) or not all(isinstance(v, list) and all(isinstance(i, str) for i in v)
                                                 for v in data.values()):
            raise CaseError(str(self.split_file), "", "a split file maps split names to lists of task ids")
        return data

    def code(self) -> Tau2Code:
        """τ²'s ``get_environment`` and ``Task`` for this domain, imported from the checkout."""
        where = self.code_folder / "environment.py"
        with _checkout_modules(self.src / "tau2", self.checkout / "data"):
            try:
                module = importlib.import_module(f"tau2.domains.{self.name}.environment")
                tasks = importlib.import_module("tau2.data_model.tasks")
            except ModuleNotFoundError as exc:
                if exc.name and not exc.name.startswith("tau2"):
                    raise DomainError(f"{where}: τ²'s code imports {exc.name!r}, which is not installed here; "
                                      f"install τ²'s runtime requirements: pip install 'passhat[tau2]' "
                                      f"(or: pip install {REQUIREMENTS})") from exc
                raise DomainError(f"{where}: cannot import τ²'s code: {describe_failure(exc, where)}") from exc
            except (Exception, SystemExit) as exc:
                raise DomainError(f"{where}: cannot import τ²'s code: {describe_failure(exc, where)}") from exc
        get_environment = getattr(module, "get_environment", None)
        task_model = getattr(tasks, "Task", None)
        if not callable(get_environment) or not isinstance(task_model, type):
            raise DomainError(f"{where}: defines no get_environment() (or tau2.data_model.tasks no Task), as τ²'s "
                              "domains do")
        return Tau2Code(get_environment, task_model)


@contextmanager
def _checkout_modules(package: Path, data: Path) -> Iterator[None]:
    """Import from ``package`` (a checkout's ``src/tau2``) with a bare ``tau2`` package and the checkout's
    data folder; afterwards ``sys.modules`` and ``os.environ`` are as they were."""
    with _IMPORT_LOCK:
        ours = [k for k in sys.modules if k == "tau2" or k.startswith("tau2.")]
        saved = {k: sys.modules.pop(k) for k in ours}
        environ = dict(os.environ)
        bare = types.ModuleType("tau2")
        bare.__path__ = [str(package)]
        sys.modules["tau2"] = bare
        os.environ["TAU2_DATA_DIR"] = str(data)
        _quiet_logging()
        importlib.invalidate_caches()
        try:
            yield
        finally:
            for k in [k for k in sys.modules if k == "tau2" or k.startswith("tau2.")]:
                del sys.modules[k]
            sys.modules.update(saved)
            os.environ.clear()
            os.environ.update(environ)


def _quiet_logging() -> None:
    """τ²'s modules log through loguru (at import, and on every call of some tools); passhat's output is its
    own. Without loguru the import fails and says what to install."""
    try:
        from loguru import logger
    except ImportError:
        return
    logger.disable("tau2")


def find_envs(checkout: Path) -> list[Tau2Env]:
    """The domains present in ``checkout``; a user error when there are none."""
    checkout = Path(checkout)
    if not checkout.is_dir():
        raise DomainError(f"{checkout}: not a folder; pass the folder of a τ²-bench checkout (it contains src/ and data/)")
    envs = [Tau2Env(checkout.resolve(), name) for name in DOMAINS]
    present = [e for e in envs if e.is_present()]
    if not present:
        raise DomainError(not_a_checkout(checkout))
    return present


def open_env(checkout: str | Path, name: str) -> Tau2Env:
    """One domain of a checkout, for a suite's domain (a clear error if it moved or changed)."""
    env = Tau2Env(Path(checkout).resolve(), name)
    if not env.is_present():
        raise DomainError(f"{env.checkout}: no τ²-bench {name} domain here (src/tau2/domains/{name}/environment.py "
                          f"and data/tau2/domains/{name}/tasks.json); if the checkout moved, change the path in the "
                          "suite's domain.py")
    return env


def _read_json(file: Path, what: str) -> Any:
    try:
        data = json.loads(read_input_text(file, what))
    except ValueError as exc:
        raise CaseError(str(file), "", f"not valid JSON: {exc}") from None
    except RecursionError:
        raise too_deep(str(file)) from None
    check_depth(data, str(file))
    return data


def read_tasks(file: Path) -> list[Task]:
    """The tasks of a τ² task file (a JSON list of tasks, or ``{"tasks": [...]}``), checked."""
    data = _read_json(file, "τ² task")
    if isinstance(data, dict) and "tasks" in data:
        data = data["tasks"]
    if not isinstance(data, list):
        raise CaseError(str(file), "", "a task file is a JSON list of tasks (or {\"tasks\": [...]})")
    tasks = [_task(file, i, raw) for i, raw in enumerate(data)]
    seen: dict[str, int] = {}
    for t in tasks:
        if t.id in seen:
            raise CaseError(str(file), f"tasks[{t.index}].id", f"{t.id!r} is also the id of tasks[{seen[t.id]}]")
        seen[t.id] = t.index
    return tasks


class _Fields:
    """Typed reads from one task's JSON, each failure a ``CaseError`` naming the task and the field."""

    def __init__(self, file: Path, where: str) -> None:
        self.file, self.where = file, where

    def fail(self, path: str, message: str) -> CaseError:
        return CaseError(str(self.file), f"{self.where}.{path}", message)

    def mapping(self, value: Any, path: str, *, optional: bool = False) -> dict[str, Any]:
        if value is None and optional:
            return {}
        if not isinstance(value, dict):
            raise self.fail(path, f"expected an object, got {type(value).__name__}")
        return value

    def items(self, value: Any, path: str) -> list[Any]:
        if value is None:
            return []
        if not isinstance(value, list):
            raise self.fail(path, f"expected a list, got {type(value).__name__}")
        return value

    def text(self, value: Any, path: str) -> str:
        if not isinstance(value, str):
            raise self.fail(path, f"expected a string, got {type(value).__name__}")
        return value

    def requestor(self, value: Any, path: str, default: Requestor = "assistant") -> Requestor:
        if value is None:
            return default
        if value not in ("assistant", "user"):
            raise self.fail(path, f"{value!r} is not 'assistant' or 'user'")
        return value  # type: ignore[no-any-return]

    def env_call(self, value: Any, path: str) -> EnvCall:
        call = self.mapping(value, path)
        assert_value = call.get("assert_value", True)
        if not isinstance(assert_value, bool):
            raise self.fail(f"{path}.assert_value", "expected true or false")
        message = call.get("message")
        return EnvCall(self.requestor(call.get("env_type"), f"{path}.env_type"),
                       self.text(call.get("func_name"), f"{path}.func_name"),
                       self.mapping(call.get("arguments"), f"{path}.arguments", optional=True), assert_value,
                       message if isinstance(message, str) else None)


def _task(file: Path, index: int, raw: Any) -> Task:
    if not isinstance(raw, dict):
        raise CaseError(str(file), f"tasks[{index}]", f"a task is an object, got {type(raw).__name__}")
    ident = raw.get("id")
    if not isinstance(ident, str) or not ident:
        raise CaseError(str(file), f"tasks[{index}].id", "a task needs an id (a string)")
    f = _Fields(file, f"tasks[{index}] (id {ident!r})")
    scenario = f.mapping(raw.get("user_scenario"), "user_scenario")
    if not isinstance(scenario.get("instructions"), str | dict):
        raise f.fail("user_scenario.instructions", "the user's instructions are a string or an object")
    initial = f.mapping(raw.get("initial_state"), "initial_state", optional=True)
    if f.items(initial.get("message_history"), "initial_state.message_history"):
        raise f.fail("initial_state.message_history", "a task that starts in the middle of a conversation is not "
                                                      "supported (no retail, airline or telecom task does)")
    setup = [f.env_call(c, f"initial_state.initialization_actions[{j}]")
             for j, c in enumerate(f.items(initial.get("initialization_actions"), "initial_state.initialization_actions"))]
    data = f.mapping(initial.get("initialization_data"), "initial_state.initialization_data", optional=True)
    has_initial = bool(setup) or any(data.get(k) is not None for k in ("agent_data", "user_data"))
    description = f.mapping(raw.get("description"), "description", optional=True)
    purpose = description["purpose"] if isinstance(description.get("purpose"), str) else ""
    criteria = raw.get("evaluation_criteria")
    if criteria is None:
        return Task(index, ident, raw, purpose, None, [], [], [], (), setup, has_initial, graded=False)
    criteria = f.mapping(criteria, "evaluation_criteria")
    actions: list[GoldAction] | None = None
    if criteria.get("actions") is not None:
        actions = [_action(f, j, a) for j, a in enumerate(f.items(criteria["actions"], "evaluation_criteria.actions"))]
    checks = [f.env_call(c, f"evaluation_criteria.env_assertions[{j}]")
              for j, c in enumerate(f.items(criteria.get("env_assertions"), "evaluation_criteria.env_assertions"))]
    said = [f.text(s, f"evaluation_criteria.communicate_info[{j}]")
            for j, s in enumerate(f.items(criteria.get("communicate_info"), "evaluation_criteria.communicate_info"))]
    nl = [f.text(s, f"evaluation_criteria.nl_assertions[{j}]")
          for j, s in enumerate(f.items(criteria.get("nl_assertions"), "evaluation_criteria.nl_assertions"))]
    basis_raw = criteria.get("reward_basis")
    basis = DEFAULT_BASIS if basis_raw is None else tuple(f.items(basis_raw, "evaluation_criteria.reward_basis"))
    for j, kind in enumerate(basis):
        if kind not in REWARD_TYPES:
            raise f.fail(f"evaluation_criteria.reward_basis[{j}]", f"{kind!r} is not one of {', '.join(REWARD_TYPES)}")
    return Task(index, ident, raw, purpose, actions, checks, said, nl, basis, setup, has_initial)  # type: ignore[arg-type]


def _action(f: _Fields, j: int, value: Any) -> GoldAction:
    path = f"evaluation_criteria.actions[{j}]"
    action = f.mapping(value, path)
    compare = action.get("compare_args")
    if compare is not None and not (isinstance(compare, list) and all(isinstance(c, str) for c in compare)):
        raise f.fail(f"{path}.compare_args", "a list of argument names, or null")
    ident = action.get("action_id")
    return GoldAction(str(ident) if ident is not None else f"{j}", f.text(action.get("name"), f"{path}.name"),
                      f.mapping(action.get("arguments"), f"{path}.arguments", optional=True),
                      f.requestor(action.get("requestor"), f"{path}.requestor"), compare)
