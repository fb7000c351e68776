"""Private copies of a fixture file made ahead of the trials that need them."""

from __future__ import annotations

import shutil
import threading
from collections.abc import Callable
from pathlib import Path


class ReadyCopies:
    """Copies of the fixture file made ahead by a thread, so a trial waits for no copy while the thread
    keeps up (a 100 MB file takes a noticeable time to copy); ``take`` copies itself when none is ready."""

    def __init__(self, make: Callable[[], Path], ahead: int = 2) -> None:
        self._make, self._ahead = make, ahead
        self._ready: list[Path] = []
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None
        self._closed = False

    def take(self) -> Path:
        with self._cond:
            if self._thread is None and not self._closed:
                self._thread = threading.Thread(target=self._fill, name="passhat-sqlite-copies", daemon=True)
                self._thread.start()
            folder = self._ready.pop(0) if self._ready else None
            self._cond.notify_all()
        return folder if folder is not None else self._make()

    def _fill(self) -> None:
        while True:
            with self._cond:
                while not self._closed and len(self._ready) >= self._ahead:
                    self._cond.wait()
                if self._closed:
                    return
            try:
                folder = self._make()
            except Exception:  # noqa: BLE001 - take() then copies itself and reports the error there
                return
            with self._cond:
                if self._closed:
                    shutil.rmtree(folder, ignore_errors=True)
                    return
                self._ready.append(folder)

    def close(self) -> None:
        with self._cond:
            self._closed = True
            ready, self._ready = self._ready, []
            self._cond.notify_all()
        for folder in ready:
            shutil.rmtree(folder, ignore_errors=True)
