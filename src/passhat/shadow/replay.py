"""Production's recorded reads, served to the candidate in the sandbox: a cassette of a kind of its own.

The runner hands each trial a session of the run's cassette (``tools/cassette.py``); this one wraps the
domain's *read* tools only. A candidate's read is answered from the recording when it matches a recorded
call of that tool that has not been used yet — the same arguments, as the tool takes them — taking them
in recorded order (so a read production made twice, before and after a write, answers the first time
with the first result, the second time with the second). A recorded error comes back as that error. A
read that matches nothing runs against the sandbox and is counted as an *unrecorded read*. Writes are
never wrapped: they always run in the sandbox.

Unlike ``--replay``, nothing is refused, so a shadow trial never becomes an infrastructure error for
lack of a recording.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from passhat.shadow.cases import Call
from passhat.tools.cassette import Cassette, CassetteSession, argument_diff
from passhat.tools.context import ToolContext, ToolFailure
from passhat.tools.declare import Tool


@dataclass(frozen=True)
class ReadCounts:
    """How one trial's reads were answered."""

    served: int = 0
    """Answered from production's recording."""
    unrecorded: int = 0
    """Matched no recorded call: answered by the sandbox."""


@dataclass(frozen=True, eq=False)
class RecordedReads(Cassette):
    """Every conversation's recorded reads, by shadow case id; one session per trial."""

    reads: Mapping[str, list[Call]] = field(default_factory=dict)
    counts: dict[tuple[str, int], ReadCounts] = field(default_factory=dict)
    """(case id, trial) → how its reads were answered, filled as trials end (the last attempt's)."""

    @classmethod
    def of(cls, folder: Path, reads: Mapping[str, list[Call]]) -> RecordedReads:
        return cls(folder, "replay", reads)

    def session(self, case_id: str, trial: int) -> CassetteSession:
        return RecordedReadsSession(self, case_id, trial)

    def describe(self) -> dict[str, Any]:
        return {"mode": "shadow", "folder": str(self.folder)}


class RecordedReadsSession(CassetteSession):
    """One trial's view of its conversation's recorded reads."""

    def __init__(self, recording: RecordedReads, case_id: str, trial: int) -> None:
        # not CassetteSession.__init__: there is no cassette file to load; the attributes the runner reads are set here
        self.cassette, self.case_id, self.trial = recording, case_id, trial
        self.recording = recording
        self.path = recording.folder
        self.interactions: list[dict[str, Any]] = []
        self.served = 0
        self.unrecorded = 0
        self.problems: list[str] = []
        self._unused = list(recording.reads.get(case_id, []))

    def wrap(self, tools: list[Tool]) -> list[Tool]:
        return [replace(t, func=self._served(t)) if t.kind == "read" else t for t in tools]

    def _match(self, tool: str, arguments: dict[str, Any]) -> Call | None:
        for i, call in enumerate(self._unused):
            if call.tool == tool and not argument_diff(call.arguments, arguments):
                return self._unused.pop(i)
        return None

    def _served(self, tool: Tool) -> Any:
        async def served(ctx: ToolContext, **kwargs: Any) -> Any:
            recorded = self._match(tool.name, json.loads(json.dumps(kwargs, default=str)))
            if recorded is None:
                self.unrecorded += 1
                out = tool.func(ctx, **kwargs)
                return await out if tool.is_async else out
            self.served += 1
            if recorded.error is not None:
                raise ToolFailure(recorded.error)
            return recorded.result

        return served

    def close(self) -> None:
        self.recording.counts[self.case_id, self.trial] = ReadCounts(self.served, self.unrecorded)
