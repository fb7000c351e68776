"""Record and replay of external tools: cassettes, one JSON file per case and trial.

A tool declared ``external=True`` calls a real service in production. ``--record DIR`` runs it and
stores each request (its validated arguments), the response (result or error) and the rows the call
changed in the sandbox; ``--replay DIR`` answers from the cassette without calling the tool, and
re-applies those rows, so the final state is the recorded one. Matching is per tool, in call order:
the Nth call of ``get_forecast`` must carry the same arguments as the Nth recorded one (calls of other
tools may interleave differently). A request that does not match — different arguments, one call too
many, no cassette — is refused with a readable diff: the agent gets a tool error, and the trial is an
infrastructure ``error``, because a stale recording is not the agent's fault (docs/datasets.md).

Tools are wrapped, not patched: the boundary still does permission → validation → fault → tool → record.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from passhat.errors import PasshatError
from passhat.inputs import check_depth, read_input_text, too_deep
from passhat.models.finite import dumps_strict
from passhat.tools.context import PermissionDenied, ToolContext, ToolFailure
from passhat.tools.declare import Tool
from passhat.world.diff import Diff, same_value
from passhat.world.replay import ReplayError, apply_diff, changes_since, log_position

CassetteMode = Literal["record", "replay"]
FORMAT = "passhat-cassette/1"
OUTCOMES = ("ok", "denied", "tool_error", "exception")
"""What a recorded call ended as (the replay answers each as it was)."""


class CassetteMismatch(Exception):
    """A replayed request differs from the recording (raised inside the tool; the agent sees an error)."""


def _jsonable(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return same_value(a, b)


def argument_diff(recorded: Any, now: Any, path: str = "") -> list[str]:
    """Readable differences between two argument objects, one line per differing field."""
    if isinstance(recorded, dict) and isinstance(now, dict):
        lines: list[str] = []
        for key in sorted(set(recorded) | set(now)):
            where = f"{path}.{key}" if path else str(key)
            if key not in now:
                lines.append(f"{where}: recorded {json.dumps(recorded[key], ensure_ascii=False)}, absent now")
            elif key not in recorded:
                lines.append(f"{where}: not in the recording, now {json.dumps(now[key], ensure_ascii=False)}")
            else:
                lines += argument_diff(recorded[key], now[key], where)
        return lines
    if _same(recorded, now):
        return []
    r, n = (json.dumps(x, ensure_ascii=False) for x in (recorded, now))
    return [f"{path or '(arguments)'}: recorded {r}, now {n}"]


@dataclass(frozen=True)
class Cassette:
    """A folder of cassettes in one mode; hands out one :class:`CassetteSession` per trial."""

    folder: Path
    mode: CassetteMode

    @classmethod
    def open(cls, folder: Path, mode: CassetteMode) -> Cassette:
        if mode == "replay" and not folder.is_dir():
            raise PasshatError(f"--replay {folder}: no such cassette folder (record one with --record {folder})")
        if mode == "record":
            folder.mkdir(parents=True, exist_ok=True)
        return cls(folder, mode)

    def path(self, case_id: str, trial: int) -> Path:
        return self.folder / case_id / f"trial-{trial}.json"

    def session(self, case_id: str, trial: int) -> CassetteSession:
        return CassetteSession(self, case_id, trial)

    def describe(self) -> dict[str, Any]:
        """The manifest's ``cassette`` block."""
        return {"mode": self.mode, "folder": str(self.folder)}


def load_interactions(path: Path) -> list[dict[str, Any]]:
    """The recorded calls of one cassette file, under the input rules (a regular file within the size and
    nesting caps, :mod:`passhat.inputs`); a :class:`PasshatError` naming the file and the field otherwise."""
    text = read_input_text(path, "cassette")
    try:
        data = json.loads(text)
    except RecursionError:
        raise too_deep(str(path)) from None
    except ValueError as exc:
        raise PasshatError(f"{path}: not a cassette: not JSON ({exc})") from None
    check_depth(data, str(path))
    interactions = data.get("interactions") if isinstance(data, dict) else None
    if not isinstance(interactions, list):
        raise PasshatError(f"{path}: interactions: expected a list of recorded calls (a cassette written by --record)")
    for n, entry in enumerate(interactions):
        where = f"{path}: interactions[{n}]"
        if not isinstance(entry, dict) or not isinstance(entry.get("tool"), str) or "arguments" not in entry:
            raise PasshatError(f"{where}: expected an object with 'tool' (a name) and 'arguments'")
        if entry.get("outcome") not in OUTCOMES:
            raise PasshatError(f"{where}.outcome: expected one of {', '.join(OUTCOMES)}, got {entry.get('outcome')!r:.60}")
        if entry["outcome"] != "ok" and not isinstance(entry.get("error"), str):
            raise PasshatError(f"{where}.error: expected the recorded error text")
        if not isinstance(entry.get("changes", {}), dict):
            raise PasshatError(f"{where}.changes: expected an object (the rows the call changed)")
    return interactions


class CassetteSession:
    """One trial's view of its cassette: wraps the external tools, then writes or checks the file."""

    def __init__(self, cassette: Cassette, case_id: str, trial: int) -> None:
        self.cassette, self.case_id, self.trial = cassette, case_id, trial
        self.path = cassette.path(case_id, trial)
        self.interactions: list[dict[str, Any]] = []
        self.served = 0
        """External calls answered from the cassette."""
        self.problems: list[str] = []
        """Refused requests; any makes the trial an infrastructure error."""
        self._calls: Counter[str] = Counter()
        self._loaded: list[dict[str, Any]] | None = None
        self._unreadable: str | None = None
        """Why the trial's cassette cannot be replayed (a file edited, truncated, not a cassette at all)."""
        if cassette.mode == "replay" and os.path.lexists(self.path):
            try:
                self._loaded = load_interactions(self.path)
            except PasshatError as exc:
                self._unreadable = str(exc)

    @property
    def replayed(self) -> bool:
        """At least one external call of this trial was answered from the cassette."""
        return self.served > 0

    def wrap(self, tools: list[Tool]) -> list[Tool]:
        """The trial's tools with every external one recorded or replayed."""
        make = self._recorder if self.cassette.mode == "record" else self._replayer
        return [replace(t, func=make(t)) if t.external else t for t in tools]

    def _recorder(self, tool: Tool) -> Any:
        async def recorded(ctx: ToolContext, **kwargs: Any) -> Any:
            self._calls[tool.name] += 1
            entry: dict[str, Any] = {"tool": tool.name, "call": self._calls[tool.name], "arguments": _jsonable(kwargs)}
            mark = log_position(ctx.world)
            try:
                out = tool.func(ctx, **kwargs)
                if tool.is_async:
                    out = await out
            except Exception as exc:
                entry["outcome"] = ("denied" if isinstance(exc, PermissionDenied)
                                    else "tool_error" if isinstance(exc, ToolFailure) else "exception")
                entry["error"] = str(exc) if entry["outcome"] != "exception" else f"{type(exc).__name__}: {exc}"
                raise
            else:
                entry["outcome"], entry["result"] = "ok", _jsonable(out)
                return out
            finally:
                entry["changes"] = changes_since(ctx.world, mark).to_json()
                self.interactions.append(entry)

        return recorded

    def _refuse(self, message: str) -> CassetteMismatch:
        self.problems.append(message)
        return CassetteMismatch(message)

    def _replayer(self, tool: Tool) -> Any:
        async def replayed(ctx: ToolContext, **kwargs: Any) -> Any:
            self._calls[tool.name] += 1
            n = self._calls[tool.name]
            where = f"{tool.name} call #{n} ({self.path})"
            if self._unreadable is not None:
                raise self._refuse(self._unreadable)
            if self._loaded is None:
                raise self._refuse(f"no cassette recorded for case {self.case_id!r} trial {self.trial}: {self.path}")
            recorded = [i for i in self._loaded if i["tool"] == tool.name]
            if n > len(recorded):
                raise self._refuse(f"{where}: not in the cassette, which has {len(recorded)} call(s) of {tool.name}")
            entry, args = recorded[n - 1], _jsonable(kwargs)
            lines = argument_diff(entry["arguments"], args)
            if lines:
                raise self._refuse(f"{where}: request differs from the recording:\n  " + "\n  ".join(lines))
            try:
                apply_diff(ctx.world, Diff.from_json(entry.get("changes", {})))
            except ReplayError as exc:
                raise self._refuse(f"{where}: the recorded side effects do not fit this trial's state: {exc}") from None
            except (ValueError, KeyError, TypeError, AttributeError) as exc:  # changes not in the shape --record writes
                raise self._refuse(f"{where}: the recorded side effects are malformed ({type(exc).__name__}: "
                                   f"{exc})") from None
            self.served += 1
            outcome = entry["outcome"]
            if outcome == "denied":
                raise PermissionDenied(entry["error"])
            if outcome == "tool_error":
                raise ToolFailure(entry["error"])
            if outcome == "exception":
                raise RuntimeError(f"(replayed) {entry['error']}")
            return entry.get("result")

        return replayed

    def close(self) -> None:
        """Write the cassette (record mode), atomically; replay mode writes nothing."""
        if self.cassette.mode != "record":
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        doc = {"format": FORMAT, "case_id": self.case_id, "trial": self.trial,
               "recorded_at": datetime.now(UTC).isoformat(), "interactions": self.interactions}
        tmp = self.path.with_suffix(".json.tmp")
        tmp.write_text(dumps_strict(doc, str(self.path), indent=2, ensure_ascii=False) + "\n", "utf-8")
        os.replace(tmp, self.path)

    def error_text(self) -> str | None:
        """The trial's error when a request was refused (``None`` otherwise)."""
        if not self.problems:
            return None
        if self._unreadable is not None:
            return f"cassette unreadable (re-record with --record); not counted against the agent:\n{self._unreadable}"
        return ("cassette mismatch — the recording is stale for this trial (re-record with --record); "
                "not counted against the agent:\n" + "\n".join(self.problems))
