"""Production-like traffic for the shadow tests: refunds conversations of the careful and the hasty agent.

Each agent runs a few refunds cases twice through ``passhat.evaluate``; its trials are written as traces in
both formats, JSONL conversations and OTLP/JSON (``passhat export-otlp --file``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

import passhat
from passhat.export import write_run_json
from passhat.shadow.from_runs import write_conversations

CASES = ["refund-4812", "store-credit-4820", "order-number-on-request-4840", "approval-timeout-4812",
         "refund-4812-drop-response", "email-drop-4870"]
"""Three plain cases (one multi-turn), a read that times out once, a refund and an email whose response is lost."""
TRIALS = 2


@dataclass(frozen=True)
class Traffic:
    """One agent's conversations: the run folder and the same trials as JSONL and as OTLP/JSON."""

    run: Path
    jsonl: Path
    otlp: Path

    def ids(self, case: str) -> set[str]:
        """The conversation ids of one case's trials."""
        return {f"{case}-t{t}" for t in range(TRIALS)}


@pytest.fixture(scope="session")
def traffic(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Traffic]:
    root = tmp_path_factory.mktemp("production")
    out = {}
    for agent in ("careful", "hasty"):
        run = passhat.evaluate("refunds", agent, trials=TRIALS, cases=CASES, out=root / agent, sanity=False,
                               on_warning=lambda _: None)
        jsonl, otlp = root / f"{agent}.jsonl", root / f"{agent}.otlp.jsonl"
        assert write_conversations(run.folder, jsonl) == len(CASES) * TRIALS
        assert write_run_json(run.folder, otlp) == len(CASES) * TRIALS
        out[agent] = Traffic(run.folder, jsonl, otlp)
    return out
