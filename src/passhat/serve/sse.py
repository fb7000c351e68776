"""Telling stream data from keep-alives in a server-sent-events stream, as bytes pass through.

The model relay (:mod:`passhat.serve.model_relay`) forwards a provider's stream to the agent chunk by
chunk and must know, for each chunk, whether the provider *said something*: the SDKs drop comment lines
(``: keep-alive``) and ``ping`` events before the agent sees anything, so those are no sign of life.
An event counts as data when it is dispatched (a blank line ends it) with a ``data`` field and a type
other than ``ping`` (Anthropic's keep-alive event; https://html.spec.whatwg.org/#event-stream-interpretation
for the format). Only what the classification needs is kept: the first :data:`KEPT` bytes of the current
line, so a provider's megabyte line costs no memory.
"""

from __future__ import annotations

import re

_LINE_END = re.compile(rb"[\r\n]")
KEPT = 64
"""Bytes of a line kept: enough for a field's name and a short ``event:`` value."""
KEEPALIVE_EVENTS = frozenset({b"ping"})
"""Event types that say nothing (Anthropic's ``event: ping``; the SDKs skip them)."""


class SseEvents:
    """Counts the data events in a stream fed to it in chunks of any size (a chunk may end mid-line)."""

    def __init__(self) -> None:
        self._line = bytearray()
        self._after_cr = False
        self._has_data = False
        self._event = b""

    def feed(self, chunk: bytes) -> int:
        """The data events that ``chunk`` completes."""
        done = 0
        start = 0
        for end in _LINE_END.finditer(chunk):  # found in C: a long line is not walked byte by byte
            i = end.start()
            is_cr = chunk[i] == 0x0D
            if is_cr or not (self._after_cr and i == start):  # the LF of a CRLF ends no second line
                self._take(chunk[start:i])
                done += self._end_line()
            self._after_cr = is_cr
            start = i + 1
        if start < len(chunk):
            self._after_cr = False
            self._take(chunk[start:])
        return done

    def _take(self, part: bytes) -> None:
        room = KEPT - len(self._line)
        if room > 0:
            self._line += part[:room]

    def _end_line(self) -> int:
        line, self._line = bytes(self._line), bytearray()
        if not line:  # a blank line dispatches the event
            is_data = self._has_data and self._event not in KEEPALIVE_EVENTS
            self._has_data, self._event = False, b""
            return int(is_data)
        if line.startswith(b":"):
            return 0  # a comment: a keep-alive
        name, colon, value = line.partition(b":")
        if not colon:
            name, value = line, b""
        if name == b"data":
            self._has_data = True
        elif name == b"event":
            self._event = value.removeprefix(b" ")
        return 0


__all__ = ["KEEPALIVE_EVENTS", "SseEvents"]
