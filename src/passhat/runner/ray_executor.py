"""The Ray executor: trials spread over the worker processes of a Ray cluster, records back to this process.

The driver (this process) starts one :class:`~passhat.runner.ray_worker.TrialWorker` actor per CPU of the
cluster (at most ``-j``), waits until each has loaded the suite and built the agent, then keeps at most
``-j`` attempts in flight cluster-wide, each sent to the least-loaded worker. Every record comes back
here and is handed to the run, which stays the single writer of ``trials.jsonl``.

A worker that dies (killed, out of memory, its node lost) fails the attempts it was running; each is an
infrastructure failure of that attempt and is retried under the same rule as any other
(:data:`~passhat.runner.executor.MAX_ATTEMPTS`), on a worker Ray restarts. Ray's own task retries are off,
so an attempt is never run twice behind our back and a record's ``attempt`` is the truth. A worker whose
event loop an agent blocks for good is killed the same way, its trial recorded (runner/dispatch.py, whose
rules hold for every kind of worker; :class:`RayWorkers` is what a Ray actor is to it).
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import time
from collections.abc import Sequence
from typing import Any

from passhat.cases import Case
from passhat.errors import PasshatError, RunError
from passhat.runner.dispatch import Dispatch, WorkerFailed, WorkerLost, close_within, first_line
from passhat.runner.executor import Emit, Replaced
from passhat.runner.ray_worker import WATCH_GROUP, WATCH_GROUP_SIZE, TrialWorker, WorkerRecipe
from passhat.runner.run import RunConfig

INSTALL_HINT = "pip install 'passhat[ray]'"
PROBE_TIMEOUT_S = 5.0
REVIVE_TIMEOUT_S = 120.0


def import_ray() -> Any:
    """Ray, imported on first use only (``passhat --help`` must stay light); a :class:`PasshatError` without it."""
    try:
        import ray
    except ImportError:
        raise PasshatError(f"--executor ray needs Ray, which is not installed here: {INSTALL_HINT}") from None
    return ray


def _probe(address: str) -> None:
    """Fail in seconds, naming the option, on an address nothing listens at (Ray itself retries for a minute)."""
    target = address.removeprefix("ray://")
    host, sep, port = target.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise PasshatError(f"--ray-address {address!r}: expected HOST:PORT (a cluster's GCS, e.g. 10.0.0.5:6379), "
                        "ray://HOST:PORT (Ray Client, port 10001), or auto (RAY_ADDRESS or the cluster on this machine)")
    try:
        socket.create_connection((host, int(port)), timeout=PROBE_TIMEOUT_S).close()
    except OSError as exc:
        raise PasshatError(f"--ray-address {address!r}: nothing answers at {host}:{port} ({exc.strerror or exc}); "
                        "is the Ray head running and the port reachable from here?") from None


def connect(address: str | None) -> bool:
    """Join the Ray cluster at ``address`` (``None``: start one on this machine); returns whether this call
    started or joined it (and so should leave it at the end). A Ray already initialised in this process
    (a test session, a notebook) is used as it is."""
    ray = import_ray()
    if ray.is_initialized():
        return False
    if address not in (None, "auto", "local"):
        _probe(address)
    options: dict[str, Any] = {"address": address, "logging_level": "WARNING"}
    if address in (None, "local"):
        options["include_dashboard"] = False
    try:
        ray.init(**options)
    except (ConnectionError, ValueError, RuntimeError) as exc:
        where = f"--ray-address {address!r}" if address else "--executor ray"
        raise PasshatError(f"{where}: cannot start or join a Ray cluster: {str(exc).strip().splitlines()[0]}") from None
    return True


class RayExecutor:
    """Runs a run's trials on a Ray cluster (see the module docstring)."""

    def __init__(self, recipe: WorkerRecipe, *, address: str | None = None, owns_cluster: bool = False) -> None:
        self.recipe = recipe
        self.address = address
        self.owns_cluster = owns_cluster
        """Leave (``ray.shutdown``) the cluster after the run: this run started or joined it."""
        self.ray = import_ray()
        self.workers = max(1, int(self.ray.cluster_resources().get("CPU", 1)))
        self.pids: list[int] = []
        """The workers' process ids as they first reported ready."""
        self.companions: list[Any] = []
        """Actors the run's workers use (its rate limits), stopped with the workers at the end."""

    @classmethod
    def connect(cls, recipe: WorkerRecipe, address: str | None = None) -> RayExecutor:
        """Check the recipe can be sent, then join (or start) the cluster; a :class:`PasshatError` before any trial."""
        import_ray()
        check_picklable(recipe)
        return cls(recipe, address=address, owns_cluster=connect(address))

    def describe(self) -> dict[str, object]:
        return {"kind": "ray", "address": self.address or "local", "workers": self.workers}

    def _start(self, count: int, concurrency: int) -> list[Any]:
        actor = self.ray.remote(concurrency_groups={WATCH_GROUP: WATCH_GROUP_SIZE})(TrialWorker).options(
            num_cpus=1, max_restarts=-1, max_task_retries=0, max_concurrency=max(1, concurrency))
        handles = [actor.remote(self.recipe) for _ in range(count)]
        try:
            self.pids = self.ray.get([h.ready.remote() for h in handles])
        except self.ray.exceptions.RayError as exc:
            for h in handles:
                self.ray.kill(h)
            cause = getattr(exc, "cause", None) or exc
            raise PasshatError(f"--executor ray: a worker could not prepare the run: {first_line(cause)}") from None
        return handles

    async def run(self, cfg: RunConfig, pending: Sequence[tuple[Case, int]], emit: Emit, *,
                  replaced: Replaced | None = None) -> None:
        if not pending:
            await asyncio.to_thread(self._stop, [])
            return
        concurrency = max(1, cfg.concurrency)
        count = min(self.workers, concurrency, len(pending))
        handles = await asyncio.to_thread(self._start, count, -(-concurrency // count))
        try:
            await Dispatch(RayWorkers(self.ray, self.recipe, handles), concurrency=concurrency, emit=emit,
                           replaced=replaced).run(pending)
        finally:
            await asyncio.to_thread(self._stop, handles)

    def _stop(self, handles: list[Any]) -> None:
        with contextlib.suppress(Exception):  # a dead worker has nothing to close
            self.ray.get([h.close.remote() for h in handles], timeout=close_within(30.0))
        for h in [*handles, *self.companions]:
            with contextlib.suppress(Exception):
                self.ray.kill(h)
        if self.owns_cluster:
            self.ray.shutdown()


class RayWorkers:
    """The run's actors as :class:`~passhat.runner.dispatch.Dispatch` sees workers: each call a Ray task, a
    Ray error turned into :class:`WorkerLost` (the actor died) or :class:`WorkerFailed`. The watchdog's calls
    run in the actor's :data:`WATCH_GROUP`, a loop of its own, so they answer while the trials' loop is blocked.
    Ray restarts a killed actor itself (``max_restarts=-1``)."""

    what = "Ray worker"
    ahead = 0

    def __init__(self, ray: Any, recipe: WorkerRecipe, handles: list[Any]) -> None:
        self.ray = ray
        self.handles = handles
        self.count = len(handles)
        self.grace_s = recipe.grace_s
        self.seed = recipe.seed

    async def _call(self, ref: Any) -> Any:
        try:
            return await asyncio.wrap_future(ref.future())
        except self.ray.exceptions.RayActorError as exc:
            raise WorkerLost(f"the Ray worker running it died: {first_line(exc)}") from None
        except self.ray.exceptions.RayError as exc:
            raise WorkerFailed(f"the Ray task failed: {first_line(exc)}") from None

    async def run(self, worker: int, case_id: str, trial: int, attempt: int) -> tuple[str, bool]:
        return await self._call(self.handles[worker].run.remote(case_id, trial, attempt))  # type: ignore[no-any-return]

    async def blocked(self, worker: int) -> tuple[str, str] | None:
        return await self._call(self.handles[worker].blocked.options(concurrency_group=WATCH_GROUP).remote())  # type: ignore[no-any-return]

    async def alive(self, worker: int) -> None:
        await self._call(self.handles[worker].alive.options(concurrency_group=WATCH_GROUP).remote())

    def kill(self, worker: int) -> None:
        with contextlib.suppress(Exception):  # already dead: Ray restarts it all the same
            self.ray.kill(self.handles[worker], no_restart=False)

    async def back(self, worker: int) -> None:
        """Ray restarts the actor; this waits until it has loaded the run again (sent attempts fail meanwhile)."""
        handle = self.handles[worker]
        deadline = time.monotonic() + REVIVE_TIMEOUT_S
        while True:
            try:
                await asyncio.wrap_future(handle.ready.remote().future())
                return
            except self.ray.exceptions.RayActorError as exc:
                if time.monotonic() > deadline:
                    raise RunError(f"a Ray worker died and was not back within {REVIVE_TIMEOUT_S:g}s "
                                   f"({first_line(exc)}); the trials recorded so far are kept: "
                                   "continue with --resume once the cluster is healthy") from None
                await asyncio.sleep(0.2)


def check_picklable(recipe: WorkerRecipe) -> None:
    """Ray sends the recipe to every worker with cloudpickle: an agent object that cannot be pickled is
    refused here, before any trial, with the way out."""
    from ray import cloudpickle

    try:
        cloudpickle.dumps(recipe)
    except Exception as exc:
        raise PasshatError(f"--executor ray: the agent {recipe.agent_spec!r} cannot be sent to Ray workers "
                        f"({type(exc).__name__}: {first_line(exc)}); give it as a spec the workers can import "
                        "(module:function or path/to/file.py:function), or make it picklable") from None

