"""Group commit: the run's records made durable in batches, off the event loop.

Every final record must be on disk (written and fsync'd) before the run counts it: before ``on_record``
(progress) sees it, and so before a resumed run would skip its (case, trial). One fsync per record made
the writer the run's ceiling (a few hundred records per second on an ordinary disk, the event loop
blocked meanwhile). Here the records that finish while a batch is being synced queue up; the next
batch writes them all with one ``write`` and one ``fsync`` in a worker thread, while the trials go on.

**Order.** Lines are in the order the records were submitted, which is the order trials finished, except
that the records of one batch are written together; readers never rely on line order (``--resume``
keys records by (case, trial)).

**Stopped.** A stop that cannot wait (:func:`passhat.shutdown.hard_exit`: an agent blocks the event
loop, so no batch task can run) writes what is queued or being written from its own thread first, each
batch once (``_writing`` decides who writes it): the trials that finished are kept.

**Failure.** A batch that cannot be written (a full disk) is the run's error: :meth:`GroupCommit.guard`
cancels the trials in flight and raises it. The records of earlier batches are durable and kept; the
failed batch's are not reported and are re-run by ``--resume``.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable

from passhat.runner.records import TrialRecord
from passhat.runner.store import RunStore
from passhat.shutdown import at_hard_exit


class GroupCommit:
    """Appends records to ``store`` in fsync'd batches; calls ``on_durable`` for each once its batch is synced."""

    def __init__(self, store: RunStore, on_durable: Callable[[TrialRecord], None] | None = None) -> None:
        self.store = store
        self.on_durable = on_durable
        self._queued: list[tuple[TrialRecord, bytes]] = []
        self._taken: bytes | None = None
        """The batch being written (in a worker thread), until it is; ``None`` when there is none."""
        self._lock = threading.Lock()
        """Guards the queue and the batch taken (held for a moment: ``submit`` takes it on the event loop)."""
        self._writing = threading.Lock()
        """Serializes writing batches between the loop's writer thread and a hard exit's thread; held through
        a write and its fsync, so never taken on the event loop (a record finishing during an fsync used to
        wait for it there, holding every trial)."""
        self._flushing: asyncio.Task[None] | None = None
        self._failed: asyncio.Future[None] | None = None
        self.batches = 0
        """Batches written so far (each one ``write`` and one ``fsync``)."""

    def submit(self, record: TrialRecord) -> None:
        """Queue a final record (called on the event loop, by the executor). Encoding (redaction included)
        happens here, so a record that cannot be stored fails the run at once, naming itself."""
        failed = self._failure()
        if failed.done():
            raise failed.exception() or RuntimeError("the run's writer stopped")
        line = self.store.encode(record)
        with self._lock:
            self._queued.append((record, line))
        if self._flushing is None:
            self._flushing = asyncio.get_running_loop().create_task(self._flush())

    async def _flush(self) -> None:
        """Write batches until the queue is empty: whatever queued while a batch synced is the next batch."""
        try:
            while self._queued:
                with self._lock:
                    batch, self._queued = self._queued, []
                    data = self._taken = b"".join(line for _, line in batch)
                await asyncio.to_thread(self._write, data)
                self.batches += 1
                for record, _ in batch:
                    if self.on_durable is not None:
                        self.on_durable(record)
        except BaseException as exc:
            self._queued = []
            failed = self._failure()
            if not failed.done():
                failed.set_exception(exc if isinstance(exc, Exception) else RuntimeError(repr(exc)))
            if not isinstance(exc, Exception):
                raise
        finally:
            self._flushing = None

    def _write(self, data: bytes) -> None:
        with self._writing:
            with self._lock:
                if self._taken is not data:  # a hard exit wrote it already
                    return
            try:
                self.store.write_lines(data)
            finally:
                with self._lock:
                    self._taken = None

    def queue_now(self, record: TrialRecord) -> None:
        """Queue a record from any thread (the loop's watchdog, while the loop is blocked); the next
        :meth:`write_now` or batch writes it. Not reported to ``on_durable``: nobody is listening then."""
        line = self.store.encode(record)
        with self._lock:
            self._queued.append((record, line))

    def write_now(self) -> None:
        """Write what is queued or taken but not yet written, from any thread (a hard exit's last step)."""
        with self._writing:  # after a batch being written: it is then durable, and not written twice
            with self._lock:
                data = (self._taken or b"") + b"".join(line for _, line in self._queued)
                self._taken, self._queued = None, []
            if data:
                self.store.write_lines(data)

    def _failure(self) -> asyncio.Future[None]:
        if self._failed is None:
            self._failed = asyncio.get_running_loop().create_future()
        return self._failed

    async def drain(self) -> None:
        """Return once every submitted record is durable (and reported); raise a failed batch's error."""
        while self._flushing is not None:
            await asyncio.shield(self._flushing)
        failed = self._failure()
        if failed.done():
            failed.result()

    async def guard(self, work: Awaitable[None]) -> None:
        """Await ``work`` (the executor running the trials), then :meth:`drain`. If a batch fails meanwhile,
        ``work`` is cancelled and the batch's error raised. If ``work`` raises, the records it submitted
        before are still made durable, then its error is raised."""
        task = asyncio.ensure_future(work)
        forget = at_hard_exit(self.write_now)
        try:
            await asyncio.wait([task, self._failure()], return_when=asyncio.FIRST_COMPLETED)
        finally:
            if not task.done():  # the writer failed (or this run was cancelled): stop the trials
                task.cancel()
                await asyncio.wait([task])
            if not task.cancelled():
                task.exception()  # retrieved here; raised below unless the writer's error is raised first
            await self.drain()
            forget()
        task.result()
