"""``--isolate process``: a Python agent in a process of its own, one per trial, in the agents' sandbox.

The agent runs under :mod:`passhat.agents.worker` as a ``cmd:`` agent would, talking to the trial's
tool server, so nothing it does can stall or corrupt the run (see the worker's docstring). Starting a
Python process costs tens of milliseconds per trial — nothing next to a model-driven trial, and the
price of a run that always finishes. A process protects the run from an agent that *crashes*; the
sandbox it runs in (:mod:`passhat.agents.confined`, as for ``cmd:`` agents) from one that is *hostile*.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from passhat.agents.command import CommandAgent


class IsolatedAgent(CommandAgent):
    kind = "process"

    def __init__(self, spec: str, **kw: Any) -> None:
        # PYTHONPATH is how the user's agent module is found (not a secret): the worker imports it as passhat did
        path = {"PYTHONPATH": os.environ["PYTHONPATH"]} if os.environ.get("PYTHONPATH") else {}
        super().__init__([sys.executable, "-m", "passhat.agents.worker", spec], extra_env=path, **kw)
        self.spec = spec

    def describe(self) -> dict[str, Any]:
        return {"kind": self.kind, "spec": self.spec, "python": sys.executable, "sandbox": self.sandbox.describe()}


def isolated_agent(spec: str, **kw: Any) -> IsolatedAgent:
    """Check that ``spec`` loads here (bad input before any trial), then run it isolated."""
    from passhat.agents import load_agent

    load_agent(spec)
    return IsolatedAgent(spec, **kw)


__all__ = ["IsolatedAgent", "isolated_agent"]
