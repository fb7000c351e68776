"""What bench_tau_world.py and bench_tau_agreement.py share: a τ-bench checkout imported as suites, τ-bench's
own ``Env`` in a worker process (bench/tau_env_worker.py), and one passhat trial of a script.

Both benchmarks need a real checkout of github.com/sierra-research/tau-bench and a Python that can import
it (its requirements: litellm, the model SDKs), kept apart from passhat's venv::

    git clone https://github.com/sierra-research/tau-bench ~/src/tau-bench
    python3 -m venv ~/src/tau-bench/.venv && ~/src/tau-bench/.venv/bin/pip install -e ~/src/tau-bench

``--tau-python`` defaults to ``CHECKOUT/.venv/bin/python``.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from passhat.cases import Case, load_suite
from passhat.domain import Domain
from passhat.runner.records import TrialRecord
from passhat.runner.trial import run_trial
from passhat.tau_bench.checkout import Env, Task, read_tasks
from passhat.tau_bench.importer import import_tau_bench
from passhat.tau_bench.perturb import Script, Tools, scripted_agent
from passhat.tau_bench.tables import Layout
from passhat.tools import ToolBoundary

HERE = Path(__file__).resolve().parent
_LOOP = asyncio.new_event_loop()
"""One event loop for every passhat trial (``asyncio.run`` per trial would add a loop's start-up to each)."""
_CALL = ToolBoundary.call


def checkout_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("checkout", nargs="?", type=Path, help="a clone of github.com/sierra-research/tau-bench")
    parser.add_argument("--tau-python", type=Path, help="a Python with τ-bench's requirements "
                        "(default: CHECKOUT/.venv/bin/python)")


def require_checkout(args: argparse.Namespace) -> tuple[Path, Path]:
    """The checkout and τ-bench's Python, or exit 2 saying what is missing and how to get it."""
    checkout: Path | None = args.checkout
    if checkout is None or not (checkout / "tau_bench" / "envs" / "retail" / "tools").is_dir():
        where = "no checkout given" if checkout is None else f"{checkout}: not a τ-bench checkout"
        sys.exit(f"τ-bench checkout absent ({where}): this benchmark compares with τ-bench's own Env, so it needs "
                 "a clone of github.com/sierra-research/tau-bench (pass the folder that contains tau_bench/):\n"
                 + (__doc__ or "").split("::", 1)[1].split("``--tau", 1)[0].strip("\n"))
    python = args.tau_python or checkout / ".venv" / "bin" / "python"
    if not Path(python).is_file():
        sys.exit(f"{python}: no Python for τ-bench's Env; make a venv with τ-bench's requirements and pass "
                 f"--tau-python:\n    python3 -m venv {checkout}/.venv && {checkout}/.venv/bin/pip install -e {checkout}")
    return checkout.resolve(), Path(python)


class TauEnv:
    """τ-bench's own Env in its own process (bench/tau_env_worker.py), one script at a time."""

    def __init__(self, python: Path, checkout: Path) -> None:
        env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}  # litellm would fetch its price list at import
        self.proc = subprocess.Popen([str(python), str(HERE / "tau_env_worker.py"), str(checkout)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)

    def trial(self, env: str, split: str, task: int, script: Script, *, digest: bool = False) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        request = {"env": env, "split": split, "task": task, "script": script.to_json(), "digest": digest}
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"τ-bench's worker ended (exit {self.proc.wait()})")
        answer: dict[str, Any] = json.loads(line)
        if "error" in answer:
            raise RuntimeError(f"τ-bench's worker: {answer['error']} ({env} {split} task {task})")
        return answer

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        self.proc.wait(timeout=30)


@dataclass
class Suite:
    """One imported environment and split: its cases in task order, its domain and its τ-bench tasks."""

    env: str
    split: str
    folder: Path
    """The imported cases."""
    cases: list[Case]
    domain: Domain
    tasks: list[Task]
    layouts: dict[str, Layout] = field(default_factory=dict)
    data: dict[str, Any] = field(default_factory=dict)
    load_s: float = 0.0

    def tools(self) -> Tools:
        schemas = {name: t.parameters for name, t in self.domain.tools.items()}
        writes = {name for name, t in self.domain.tools.items() if t.kind == "write"}
        ending = {name for name, t in self.domain.tools.items() if t.ends_episode}
        return Tools.of(schemas, writes, ending)


def import_suites(checkout: Path, wanted: list[tuple[str, str]], out: Path | None = None) -> dict[tuple[str, str], Suite]:
    """Import each (env, split) with ``passhat cases import --format tau-bench`` and load it."""
    out = Path(out or tempfile.mkdtemp(prefix="passhat-tau-"))
    suites = {}
    for split in sorted({s for _, s in wanted}):
        import_tau_bench(checkout, out / split, split=split)
        for env in sorted({e for e, s in wanted if s == split}):
            t = time.perf_counter()
            folder = out / split / env / "cases"
            loaded = load_suite(str(folder))
            load_s = time.perf_counter() - t
            source = Env(checkout, env)
            tasks = read_tasks(source.tasks_file(split))
            cases = sorted(loaded.cases, key=lambda c: int(c.id.rsplit("-", 1)[1]))
            assert [int(c.id.rsplit("-", 1)[1]) for c in cases] == [t.index for t in tasks]
            data = source.read_data()
            layouts = {name: Layout.of(name, records, name) for name, records in data.items()}
            suites[(env, split)] = Suite(env, split, folder, cases, loaded.domain_of(cases[0]), tasks, layouts, data, load_s)
    return suites


def replay(script: Script) -> Any:
    """An agent that does what the script says: each call, each message; the last word is a goodbye."""
    return scripted_agent(script)


@dataclass
class Timed:
    """One passhat trial's record and what it cost."""

    record: TrialRecord
    ms: float
    """The whole trial (``run_trial``), wall time."""
    cpu_ms: float
    """The same in this process's CPU time."""
    calls_cpu_ms: list[float]
    """Each tool call at the boundary (``ToolBoundary.call``), in this thread's CPU time: on a loaded
    machine the wall time of a 0.1 ms call mostly measures waiting for a core."""


def passhat_trial(suite: Suite, index: int, script: Script, seed: int = 1) -> Timed:
    """One trial of case ``index`` through passhat's trial path, timed."""
    calls: list[float] = []

    async def call(self: ToolBoundary, name: str, arguments: Any) -> Any:
        t = time.thread_time()
        try:
            return await _CALL(self, name, arguments)
        finally:
            calls.append((time.thread_time() - t) * 1000)

    async def timed() -> Timed:
        t, cpu = time.perf_counter(), time.process_time()
        record = await run_trial(suite.cases[index], suite.domain, replay(script), trial=0, seed=seed)
        return Timed(record, (time.perf_counter() - t) * 1000, (time.process_time() - cpu) * 1000, calls)

    ToolBoundary.call = call  # type: ignore[method-assign]
    try:
        return _LOOP.run_until_complete(timed())
    finally:
        ToolBoundary.call = _CALL  # type: ignore[method-assign]


def digest(suite: Suite, record: TrialRecord) -> dict[str, str]:
    """τ-bench's final data as passhat recorded it: the fixture with the trial's diff applied, decoded, and
    hashed as the worker hashes τ-bench's (``json.dumps(sort_keys=True)``, so types count)."""
    final = {name: dict(records) for name, records in suite.data.items()}
    for table, changes in record.diff.items():
        layout = suite.layouts[table]
        for change in changes:
            key = change["key"][0]
            if change["after"] is None:
                final[table].pop(key, None)
            else:
                row = tuple(change["after"][c] for c in (layout.key, *layout.columns, layout.more))
                final[table][key] = layout.decode(row)
    return {name: hashlib.sha256(json.dumps(records, sort_keys=True).encode()).hexdigest()
            for name, records in final.items()}
