"""Choosing where a run's trials execute (``executor=``, ``--executor``): here, in processes forked here, or on
a Ray cluster.

For processes and Ray, the workers rebuild what the driver built: the suite from its name or folder, and the
agent, user simulator and judge from the same options through :func:`worker_setup`. A spec is sent as text
(a ``path.py`` made absolute, so workers need not share the driver's working directory). A Python agent
object is inherited by a forked worker as it is; to Ray it is sent with cloudpickle (functions of importable
modules by reference, closures and ``__main__`` functions by value), and one that cannot be pickled is
refused before any trial.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any, Literal

from passhat.api.options import RunOptions
from passhat.cases import Suite
from passhat.errors import PasshatError
from passhat.llm.ratelimit import LimiterFactory, local_limiter
from passhat.runner.executor import Executor
from passhat.tools.cassette import Cassette

ExecutorKind = Literal["local", "processes", "ray"]


def check_executor(options: RunOptions) -> None:
    """Bad combinations of ``executor`` and the options that go with it, before anything else happens."""
    kind = options.executor
    if kind not in ("local", "processes", "ray"):
        raise PasshatError(f"--executor {kind!r}: expected local, processes or ray")
    if options.ray_address is not None and kind != "ray":
        raise PasshatError("--ray-address applies to --executor ray")
    if options.workers is not None and kind != "processes":
        raise PasshatError("--workers applies to --executor processes")
    if kind == "processes":
        from passhat.runner.process_executor import check_fork

        check_fork()
        if options.rate_limits:
            raise PasshatError("--rate-limit with --executor processes: each worker process would allow the whole "
                               "limit, so the run would exceed it; use --executor local (one process's trials share "
                               "its buckets) or ray (one limiter for the cluster)")


def worker_spec(spec: str) -> str:
    """The spec as a worker loads it: ``path.py:function`` with an absolute path when the file is here."""
    target, sep, attr = spec.rpartition(":")
    if sep and target.endswith(".py") and Path(target).is_file():
        return f"{Path(target).resolve()}:{attr}"
    return spec


def worker_setup(agent: Any, label: str, options: RunOptions, limiters: LimiterFactory | None = None) -> Any:
    """On a worker: the agent, user simulator and judge, built as the driver built them, from the same options."""
    from passhat.agents.python import as_agent
    from passhat.api.roles import build_model_setup

    return build_model_setup(label, options, agent=None if agent is None else as_agent(agent, label),
                             limiters=limiters or local_limiter)


def make_executor(options: RunOptions, *, suite: Suite, agent: Any, label: str,
                  cassette: Cassette | None) -> Executor | None:
    """``None`` for the local executor (the runner's default); the processes executor; for Ray, the connected
    executor. ``agent`` is the spec, or the Python object as the caller gave it; ``options`` are the run's
    (their paths absolute)."""
    if options.executor == "local":
        return None
    from passhat.runner.ray_worker import SuiteRef, WorkerRecipe

    if options.executor == "processes":
        from passhat.runner.process_executor import ProcessExecutor, usable_cpus

        forked = functools.partial(worker_setup, None, worker_spec(agent), options) if isinstance(agent, str) \
            else functools.partial(worker_setup, agent, label, options)
        return ProcessExecutor(WorkerRecipe(suite=SuiteRef.of(suite), setup=forked, agent_spec=label,
                                            trials=options.trials, seed=options.seed, what="worker process",
                                            cassette=_absolute_cassette(cassette)),
                               min(options.workers or usable_cpus(), options.concurrency))
    from passhat.runner.ray_executor import RayExecutor

    limiters = None
    if options.rate_limits:  # every worker's limiters ask the run's actor, started below once Ray is up
        from passhat.llm.ray_limits import RemoteLimiters, actor_name

        limiters = RemoteLimiters(actor_name())
    if isinstance(agent, str):
        setup = functools.partial(worker_setup, None, worker_spec(agent), options, limiters)
    else:
        setup = functools.partial(worker_setup, agent, label, options, limiters)
    recipe = WorkerRecipe(suite=SuiteRef.of(suite), setup=setup, agent_spec=label, trials=options.trials,
                          seed=options.seed, cassette=_absolute_cassette(cassette))
    executor = RayExecutor.connect(recipe, options.ray_address)
    if limiters is not None:
        from passhat.llm.ray_limits import start_actor

        executor.companions.append(start_actor(limiters.actor_name, dict(options.rate_limits)))
    return executor


def _absolute_cassette(cassette: Cassette | None) -> Cassette | None:
    return None if cassette is None else Cassette(cassette.folder.resolve(), cassette.mode)
