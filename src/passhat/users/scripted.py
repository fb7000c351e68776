"""A deterministic user for CI: scripted turns first, then facts on request.

τ-bench's LLM-played user causes up to 30 % of failures; a scripted user makes a trial's outcome a
property of the agent alone.
"""

from __future__ import annotations

import re

from passhat.cases.model import UserSpec


class ScriptedUser:
    """Answers from the case's user spec.

    For each agent message: the next scripted turn is said if it has no ``when`` or its pattern matches;
    otherwise every fact whose name the message mentions is told; otherwise a question gets "I don't
    know." and a statement ends the conversation.
    """

    def __init__(self, spec: UserSpec) -> None:
        self.spec = spec
        self._next_turn = 0
        self.replies = 0

    async def reply(self, agent_text: str) -> str | None:
        if self.replies >= self.spec.max_turns:
            return None
        answer = self._answer(agent_text)
        if answer is not None:
            self.replies += 1
        return answer

    def _answer(self, text: str) -> str | None:
        turns = self.spec.turns
        if self._next_turn < len(turns):
            turn = turns[self._next_turn]
            if turn.when is None or re.search(turn.when, text, re.IGNORECASE):
                self._next_turn += 1
                return turn.say
        lowered = text.lower()
        told = [
            f"{name.replace('_', ' ')}: {value}"
            for name, value in self.spec.facts.items()
            if name.replace("_", " ").lower() in lowered
        ]
        if told:
            return "; ".join(told)
        if "?" in text:
            return "I don't know."
        return None
