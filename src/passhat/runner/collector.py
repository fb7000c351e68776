"""Python's garbage collector while a run's trials execute: what was loaded before is left out of its passes.

At ``-j 256`` a run of the refunds suite made ~630 collections (0.35 s for 1,024 trials, a third of a ms of a
trial's ~2.8): a young collection every 700 new container objects, and full passes over everything the
process holds — modules, the suite, pydantic's schemas, 256 live trials — of 57–77 ms each. The trials'
objects are acyclic almost all of them and are freed by reference counting; the collector only finds the
rare cycle. So while trials run, the objects that existed before the run are frozen (``gc.freeze``: no pass
visits them again until they are unfrozen) and young collections happen every :data:`RUN_THRESHOLD`
allocations instead of 700. Garbage cycles are still collected, later and in fewer passes.

Applied where a run executes (``runner.run.execute``), not at import: importing passhat changes nothing for
the program that imports it, and leaving the run restores the thresholds and unfreezes. A program that froze
objects itself (``gc.get_freeze_count()`` > 0, say a forking server) keeps its own freeze: only the threshold
changes then. Runs nested or concurrent in one process share one setting: the first in sets it, the last out
restores it.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

RUN_THRESHOLD = 20_000
"""Allocations of container objects between two young collections while a run executes (Python's default is
700, 2,000 from 3.13): about four trials' worth at ``-j 256``, so a trial's short-lived objects are mostly
freed before a collection looks at them."""

_lock = threading.Lock()
_depth = 0
_saved: tuple[tuple[int, int, int], bool] | None = None
"""The thresholds before the outermost run, and whether that run froze the objects it found."""


@contextmanager
def run_collector(threshold: int = RUN_THRESHOLD) -> Iterator[None]:
    """While the block runs: objects that exist now frozen out of collections, and young collections every
    ``threshold`` allocations (never more often than Python's own setting). Restored on the way out. Nothing
    changes when collection is off (``gc.disable()``, or a threshold of 0)."""
    global _depth, _saved
    with _lock:
        _depth += 1
        if _depth == 1:
            old = gc.get_threshold()
            if gc.isenabled() and old[0] > 0:  # a program that turned collection off keeps it off
                freeze = gc.get_freeze_count() == 0
                _saved = (old, freeze)
                if freeze:
                    gc.freeze()
                gc.set_threshold(max(threshold, old[0]), old[1], old[2])
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _saved is not None:
                (old, froze), _saved = _saved, None
                gc.set_threshold(*old)
                if froze:
                    gc.unfreeze()
