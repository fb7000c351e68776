"""Helpers for the upstream tests: the notes server of tests/data/upstream on a workspace world."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp", reason="needs the mcp extra: pip install 'passhat[mcp]'")

from passhat.cases import Case  # noqa: E402
from passhat.domain import Domain  # noqa: E402
from passhat.runner.records import TrialRecord  # noqa: E402
from passhat.runner.trial import run_trial  # noqa: E402
from passhat.upstream import Upstream  # noqa: E402

DATA = Path(__file__).parents[1] / "data" / "upstream"
NOTES_SERVER = DATA / "notes_server.py"
NOTES_WS = DATA / "notes_ws"


def notes_upstream(mode: str = "normal", **options: Any) -> Upstream:
    """The notes server on the trial's workspace, acting for the case's identity."""
    options.setdefault("name", "notes")
    return Upstream(f"stdio:{{python}} {NOTES_SERVER} {{workspace}} --mode {mode}",
                    env={"NOTES_IDENTITY": "{identity}"}, **options)


def notes_domain(mode: str = "normal", tools: list[Any] | None = None, **options: Any) -> Domain:
    return Domain("notebook", workspace=NOTES_WS, policy="Keep the notes tidy.", tools=tools or [],
                  mcp=notes_upstream(mode, **options) if mode else None)


def case(**fields: Any) -> Case:
    data = {"id": "c", "domain": "notebook", "instruction": "Tidy my notes.", "user": {"identity": "ana"}}
    return Case.model_validate({**data, **fields})


Script = list[tuple[str, dict[str, Any]]]


def scripted(calls: Script) -> Callable[[Any], Awaitable[str]]:
    """An agent that makes ``calls`` in order, whatever they return."""

    async def agent(episode: Any) -> str:
        for name, args in calls:
            await episode.call(name, args)
        return "done"

    return agent


def trial(domain: Domain, calls: Script, **case_fields: Any) -> TrialRecord:
    return asyncio.run(run_trial(case(**case_fields), domain, scripted(calls), 0, 7))


@pytest.fixture(scope="session")
def notes() -> Domain:
    """The well-behaved notes server, listed once for the session."""
    domain = notes_domain()
    assert domain.tools
    return domain


@pytest.fixture
def quick_shutdown(monkeypatch: pytest.MonkeyPatch) -> None:
    """A hung server is given 2 s to exit after its stdin closes, and 2 s after SIGTERM; 0.2 s in tests."""
    from passhat.upstream import stdio

    monkeypatch.setattr(stdio, "GRACE_SECONDS", 0.2)
    monkeypatch.setattr(stdio, "KILL_SECONDS", 0.2)
