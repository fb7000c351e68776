"""The Ray executor: trials spread over the worker processes of a Ray cluster, records back to this process.

The driver (this process) starts one :class:`~passhat.runner.ray_worker.TrialWorker` actor per CPU of the
cluster (at most ``-j``), waits until each has loaded the suite and built the agent, then keeps at most
``-j`` attempts in flight cluster-wide, each sent to the least-loaded worker. Every record comes back
here and is handed to the run, which stays the single writer of ``trials.jsonl``.

A worker that dies (killed, out of memory, its node lost) fails the attempts it was running; each is an
infrastructure failure of that attempt and is retried under the same rule as any other
(:data:`~passhat.runner.executor.MAX_ATTEMPTS`), on a worker Ray restarts. Ray's own task retries are off,
so an attempt is never run twice behind our back and a record's ``attempt`` is the truth.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from passhat.cases import Case
from passhat.errors import InfrastructureError, RunError, UserError
from passhat.runner.executor import MAX_ATTEMPTS, Emit
from passhat.runner.ray_worker import TrialWorker, WorkerRecipe
from passhat.runner.records import TrialRecord
from passhat.runner.run import RunConfig
from passhat.runner.trial import error_record
from passhat.seeding import trial_seed

INSTALL_HINT = "pip install 'passhat[ray]'"
PROBE_TIMEOUT_S = 5.0
REVIVE_TIMEOUT_S = 120.0


def import_ray() -> Any:
    """Ray, imported on first use only (``passhat --help`` must stay light); a :class:`UserError` without it."""
    try:
        import ray
    except ImportError:
        raise UserError(f"--executor ray needs Ray, which is not installed here: {INSTALL_HINT}") from None
    return ray


def _probe(address: str) -> None:
    """Fail in seconds, naming the option, on an address nothing listens at (Ray itself retries for a minute)."""
    target = address.removeprefix("ray://")
    host, sep, port = target.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise UserError(f"--ray-address {address!r}: expected HOST:PORT (a cluster's GCS, e.g. 10.0.0.5:6379), "
                        "ray://HOST:PORT (Ray Client, port 10001), or auto (RAY_ADDRESS or the cluster on this machine)")
    try:
        socket.create_connection((host, int(port)), timeout=PROBE_TIMEOUT_S).close()
    except OSError as exc:
        raise UserError(f"--ray-address {address!r}: nothing answers at {host}:{port} ({exc.strerror or exc}); "
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
        raise UserError(f"{where}: cannot start or join a Ray cluster: {str(exc).strip().splitlines()[0]}") from None
    return True


@dataclass
class _Flight:
    case: Case
    trial: int
    attempt: int
    worker: int
    started: float


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
        """Check the recipe can be sent, then join (or start) the cluster; a :class:`UserError` before any trial."""
        import_ray()
        check_picklable(recipe)
        return cls(recipe, address=address, owns_cluster=connect(address))

    def describe(self) -> dict[str, object]:
        return {"kind": "ray", "address": self.address or "local", "workers": self.workers}

    def _start(self, count: int, concurrency: int) -> list[Any]:
        actor = self.ray.remote(TrialWorker).options(
            num_cpus=1, max_restarts=-1, max_task_retries=0, max_concurrency=max(1, concurrency))
        handles = [actor.remote(self.recipe) for _ in range(count)]
        try:
            self.pids = self.ray.get([h.ready.remote() for h in handles])
        except self.ray.exceptions.RayError as exc:
            for h in handles:
                self.ray.kill(h)
            cause = getattr(exc, "cause", None) or exc
            raise UserError(f"--executor ray: a worker could not prepare the run: {_first_line(cause)}") from None
        return handles

    async def run(self, cfg: RunConfig, pending: Sequence[tuple[Case, int]], emit: Emit) -> None:
        if not pending:
            await asyncio.to_thread(self._stop, [])
            return
        concurrency = max(1, cfg.concurrency)
        count = min(self.workers, concurrency, len(pending))
        handles = await asyncio.to_thread(self._start, count, -(-concurrency // count))
        queue = deque((case, trial, 1) for case, trial in pending)
        flying: dict[asyncio.Future[Any], _Flight] = {}
        reviving: dict[asyncio.Task[None], int] = {}
        """Workers that died, until Ray has restarted them: nothing is sent to them meanwhile."""
        load = [0] * count

        def send() -> None:
            up = [i for i in range(count) if i not in reviving.values()]
            while queue and up and len(flying) < concurrency:
                case, trial, attempt = queue.popleft()
                worker = min(up, key=load.__getitem__)
                ref = handles[worker].run.remote(case.id, trial, attempt)
                flying[asyncio.wrap_future(ref.future())] = _Flight(case, trial, attempt, worker, time.perf_counter())
                load[worker] += 1

        try:
            send()
            while flying or queue:  # a worker still restarting at the end is not waited for
                finished, _ = await asyncio.wait([*flying, *reviving], return_when=asyncio.FIRST_COMPLETED)
                final: list[TrialRecord] = []
                for done in finished:
                    if done in reviving:
                        reviving.pop(done)  # type: ignore[call-overload]
                        done.result()  # a worker Ray could not bring back ends the run (resume it later)
                        continue
                    flight = flying.pop(done)
                    load[flight.worker] -= 1
                    record, raised, lost = self._outcome(done, flight)
                    if lost and flight.worker not in reviving.values():
                        reviving[asyncio.ensure_future(self._revive(handles[flight.worker]))] = flight.worker
                    if raised and flight.attempt < MAX_ATTEMPTS:
                        queue.appendleft((flight.case, flight.trial, flight.attempt + 1))
                    else:
                        final.append(record)
                send()  # the workers get their next attempts before the records are encoded (redaction)
                for record in final:
                    emit(record)
        finally:
            for future in [*flying, *reviving]:
                future.cancel()
            await asyncio.to_thread(self._stop, handles)

    async def _revive(self, handle: Any) -> None:
        """Wait until Ray has restarted a dead worker (attempts sent meanwhile would fail as unavailable)."""
        deadline = time.monotonic() + REVIVE_TIMEOUT_S
        while True:
            try:
                await asyncio.wrap_future(handle.ready.remote().future())
                return
            except self.ray.exceptions.RayActorError as exc:
                if time.monotonic() > deadline:
                    raise RunError(f"a Ray worker died and was not back within {REVIVE_TIMEOUT_S:g}s "
                                   f"({_first_line(exc)}); the trials recorded so far are kept: "
                                   "continue with --resume once the cluster is healthy") from None
                await asyncio.sleep(0.2)

    def _outcome(self, future: asyncio.Future[Any], flight: _Flight) -> tuple[TrialRecord, bool, bool]:
        """The attempt's record, whether it raised, and whether its worker was lost (an infrastructure
        failure of the attempt: it may or may not have run, and its record is gone with the worker)."""
        try:
            text, raised = future.result()
        except self.ray.exceptions.RayError as exc:
            lost = isinstance(exc, self.ray.exceptions.RayActorError)
            what = "the Ray worker running it died" if lost else "the Ray task failed"
            seed = trial_seed(self.recipe.seed, flight.case.id, flight.trial)
            failure = InfrastructureError(f"{what}: {_first_line(exc)}")
            return error_record(flight.case, flight.trial, seed, flight.attempt, flight.started, failure), True, lost
        return TrialRecord.model_validate_json(text), bool(raised), False

    def _stop(self, handles: list[Any]) -> None:
        with contextlib.suppress(Exception):  # a dead worker has nothing to close
            self.ray.get([h.close.remote() for h in handles], timeout=30)
        for h in [*handles, *self.companions]:
            with contextlib.suppress(Exception):
                self.ray.kill(h)
        if self.owns_cluster:
            self.ray.shutdown()


def check_picklable(recipe: WorkerRecipe) -> None:
    """Ray sends the recipe to every worker with cloudpickle: an agent object that cannot be pickled is
    refused here, before any trial, with the way out."""
    from ray import cloudpickle

    try:
        cloudpickle.dumps(recipe)
    except Exception as exc:
        raise UserError(f"--executor ray: the agent {recipe.agent_spec!r} cannot be sent to Ray workers "
                        f"({type(exc).__name__}: {_first_line(exc)}); give it as a spec the workers can import "
                        "(module:function or path/to/file.py:function), or make it picklable") from None


def _first_line(exc: BaseException) -> str:
    lines = [line for line in str(exc).strip().splitlines() if line.strip()]
    return lines[0] if lines else type(exc).__name__
