"""The passhat domain of one τ² domain, running τ²'s own environment on passhat's world.

When the suite loads, τ²'s ``get_environment()`` is called once (its toolkits, databases, policy and
``sync_tools``). Each tool of its toolkits becomes a passhat tool with τ²'s name, description and
parameter schema (what τ²'s agent sees: the toolkit's ``openai_schema``); the user's toolkit (telecom's
phone) becomes the domain's ``user_tools``. A call:

1. checks the arguments' top-level JSON types against that schema and passes the values on as sent
   (τ² does not validate either; an integer stays an integer);
2. gives the toolkits databases read from the trial's tables on demand (:mod:`.store`);
3. runs ``Environment.make_tool_call`` (τ²'s own dispatch, as the agent's or the user's call) and then
   ``sync_tools()``, τ²'s hook after every call (telecom copies the line's state to the phone there);
4. writes back what changed; the result is what τ²'s tool message carries (``to_json_str``), parsed.

A tool that raises is a tool error with τ²'s message (its writes rolled back, as every passhat call). The
fixtures are the domain's database as ``get_environment()`` loads it (``default``, after one
``sync_tools()``, as τ²'s orchestrator starts), and one per task with an ``initial_state``: τ²'s
``Environment.set_state`` on a fresh environment, with the task's initialization data and actions.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from passhat.domain import Domain
from passhat.errors import DomainError
from passhat.tau2_bench.checkout import Task, Tau2Code, Tau2Env, open_env, read_tasks
from passhat.tau2_bench.graders import tau2_action, tau2_env_assertions
from passhat.tau2_bench.store import Store
from passhat.tools import SchemaTool, ToolContext, ToolFailure, schema_tool

JSON_TYPES: dict[str, tuple[type, ...]] = {"string": (str,), "integer": (int,), "number": (int, float),
                                           "boolean": (bool,), "array": (list,), "object": (dict,)}


def task_fixture(task: Task) -> str:
    """The fixture of a task with an ``initial_state``."""
    return f"task:{task.id}"


@dataclass
class Runtime:
    """τ²'s environment of one domain and how its databases are kept; calls take turns on it."""

    code: Tau2Code
    env: Any
    store: Store
    lock: threading.RLock

    def run(self, db: Any, name: str, requestor: str, kwargs: dict[str, Any], *, mutates: bool) -> Any:
        """One call of τ²'s tool ``name`` on the tables of ``db``, then τ²'s sync hook."""
        with self.lock:
            attached = self.store.attach(db, self.env)
            result = self.env.make_tool_call(name, requestor=requestor, **kwargs)
            self.env.sync_tools()
            attached.write_back(maps=mutates)
            text = self.env.to_json_str(result)
        if isinstance(result, str):
            return result
        try:
            return json.loads(text)
        except ValueError:
            return text

    def check(self, tables: Any, calls: list[tuple[str, str, dict[str, Any]]]) -> list[Any]:
        """Run τ²'s functions (assertions) in order on a state read through ``tables``, writing nothing;
        ``sync_tools()`` after each, as τ²'s ``run_env_function_call`` does."""
        out = []
        with self.lock:
            self.store.attach(tables, self.env)
            for env_type, func_name, arguments in calls:
                kit = self.env.tools if env_type == "assistant" else self.env.user_tools
                func = getattr(kit, func_name, None)
                if func is None:
                    raise ValueError(f"τ²'s {env_type} toolkit has no function {func_name!r}")
                out.append(func(**arguments))
                self.env.sync_tools()
        return out


class Tau2Domain(Domain):
    """A domain whose code and data live in a τ² checkout: its files are part of the content hash."""

    def __init__(self, source: Tau2Env, runtime: Runtime, task_states: dict[str, str], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.source = source
        self.runtime = runtime
        self._task_states = task_states
        """Task fixture → the task's ``initial_state`` as JSON text (what the fixture is built from)."""

    def content_hash(self) -> str:
        h = hashlib.sha256(super().content_hash().encode())
        for file in self.source.hashed_files():
            h.update(str(file.relative_to(self.source.checkout)).encode())
            h.update(file.read_bytes())
        return h.hexdigest()

    def fixture_hash(self, fixture: str) -> str:
        """A task fixture is τ²'s ``set_state`` on the default fixture with the task's initial state: its hash
        is of those inputs (the code and data are in :meth:`content_hash`), so hashing a suite does not build
        every task's fixture."""
        if fixture in self._task_states:
            base = super().fixture_hash("default")
            return hashlib.sha256(f"{base} {self._task_states[fixture]}".encode()).hexdigest()
        return super().fixture_hash(fixture)


def tau2_bench_domain(checkout: str | Path, env: str) -> Tau2Domain:
    """The domain of τ² domain ``env`` (``retail``, ``airline``, ``telecom``) of the checkout at ``checkout``."""
    source = open_env(checkout, env)
    code = source.code()
    environment = _environment(code, source)
    store = Store(environment)
    runtime = Runtime(code, environment, store, threading.RLock())
    tools = [_tool(runtime, kit_name, "assistant") for kit_name in _tool_names(environment.tools, source)]
    user_kit = getattr(environment, "user_tools", None)
    user_tools = [_tool(runtime, n, "user") for n in _tool_names(user_kit, source)] if user_kit is not None else []
    tasks = read_tasks(source.tasks_file)
    fixtures: dict[str, Any] = {"default": _fixture(runtime, None)}
    states: dict[str, str] = {}
    for task in tasks:
        if task.has_initial_state:
            fixtures[task_fixture(task)] = _fixture(runtime, task)
            states[task_fixture(task)] = json.dumps(task.raw.get("initial_state"), sort_keys=True)
    return Tau2Domain(
        source, runtime, states, name=f"tau2-{env}", schema=store.schema(), fixtures=fixtures,
        policy=str(environment.get_policy()), tools=tools, user_tools=user_tools,
        graders=[tau2_env_assertions(runtime), tau2_action])


def _environment(code: Tau2Code, source: Tau2Env) -> Any:
    try:
        return code.get_environment()
    except (Exception, SystemExit) as exc:
        raise DomainError(f"{source.code_folder / 'environment.py'}: τ²'s get_environment() failed: "
                          f"{type(exc).__name__}: {exc}") from exc


def _tool_names(kit: Any, source: Tau2Env) -> list[str]:
    try:
        return sorted(kit.get_tools())
    except (Exception, SystemExit) as exc:
        raise DomainError(f"{source.code_folder}: τ²'s toolkit {type(kit).__name__} does not list its tools: "
                          f"{type(exc).__name__}: {exc}") from exc


def _fixture(runtime: Runtime, task: Task | None) -> Callable[[sqlite3.Connection], None]:
    """The loader of the default fixture (``task=None``) or of a task's initial state."""

    def load(conn: sqlite3.Connection) -> None:
        with runtime.lock:
            env = runtime.code.get_environment()
            if task is None:
                env.sync_tools()
            else:
                model = runtime.code.task_model.model_validate(task.raw)
                state = model.initial_state
                try:
                    env.set_state(initialization_data=state.initialization_data,
                                  initialization_actions=state.initialization_actions, message_history=[])
                except (Exception, SystemExit) as exc:
                    raise DomainError(f"τ² task {task.id!r}: its initial_state cannot be applied: "
                                      f"{type(exc).__name__}: {exc}") from exc
            runtime.store.load(conn, env)

    return load


def _tool(runtime: Runtime, name: str, requestor: str) -> SchemaTool:
    kit = runtime.env.tools if requestor == "assistant" else runtime.env.user_tools
    function = kit.get_tools()[name].openai_schema["function"]
    schema = dict(function.get("parameters") or {"type": "object", "properties": {}})
    mutates = bool(kit.tool_mutates_state(name))

    def call(ctx: ToolContext, **arguments: Any) -> Any:
        try:
            return runtime.run(ctx.db, name, requestor, arguments, mutates=mutates)
        except Exception as exc:  # τ² answers any exception with an error message ("Error: ..."); rolled back here
            raise ToolFailure(str(exc)) from exc

    call.__name__ = call.__qualname__ = name
    return schema_tool(name, schema, call, kind="write" if mutates else "read",
                       description=str(function.get("description") or name), check=_top_level(schema))


def _top_level(schema: dict[str, Any]) -> Callable[[Any], list[tuple[tuple[str | int, ...], str]]]:
    """The arguments' check: required parameters given, no unknown ones, each of its top-level JSON type (an
    optional one may be null). τ² checks nothing; the tool checks the rest, as it does in τ²."""
    properties = schema.get("properties") or {}
    required = set(schema.get("required") or [])

    def check(arguments: Any) -> list[tuple[tuple[str | int, ...], str]]:
        if not isinstance(arguments, dict):
            return [((), "arguments must be a JSON object")]
        problems: list[tuple[tuple[str | int, ...], str]] = [((p,), "required") for p in sorted(required - set(arguments))]
        for param, value in arguments.items():
            spec = properties.get(param)
            if spec is None:
                problems.append(((param,), f"unknown parameter; the tool takes: {', '.join(properties) or 'none'}"))
                continue
            kinds = JSON_TYPES.get(str(spec.get("type"))) if isinstance(spec, dict) else None
            if kinds is None or (value is None and param not in required):
                continue
            if isinstance(value, bool) and bool not in kinds or not isinstance(value, kinds):
                problems.append(((param,), f"expected {spec['type']}, got {type(value).__name__}"))
        return problems

    return check
