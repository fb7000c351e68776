"""The episode exposes the case's public metadata (issue 12, item 5), in-process and over the wire."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from passhat.cases import load_suite
from passhat.runner.trial import run_trial

NOTES = Path(__file__).parents[1] / "data" / "notes"


def test_an_in_process_agent_sees_the_case_id_and_tags() -> None:
    suite = load_suite(str(NOTES / "cases"))
    seen: dict[str, Any] = {}

    async def agent(episode: Any) -> str:
        seen["id"], seen["tags"] = episode.case_id, episode.tags
        return "nothing"

    asyncio.run(run_trial(suite.cases[0], suite.domain_of(suite.cases[0]), agent, 0, 1))
    assert seen == {"id": "add-note", "tags": {"scenario": "normal", "risk": "low"}}
