"""A deterministic user for CI: scripted turns first, then the goal and facts on request.

τ-bench's LLM-played user causes up to 30 % of failures; a scripted user makes a trial's outcome a
property of the agent alone.
"""

from __future__ import annotations

import re

from passhat.cases.model import UserSpec

ASKS_WHAT_USER_WANTS = re.compile(
    r"\b(?:how (?:can|could|may|shall) (?:i|we) (?:help|assist)"
    r"|what (?:can|could|may|shall) (?:i|we) do for you"
    r"|what (?:can|could) (?:i|we) help (?:you )?with"
    r"|what (?:do|did) you (?:need|want)"
    r"|what would you like (?:me )?(?:to do|help with)"
    r"|what(?: is|'s|\u2019s) (?:the|your) (?:issue|problem|request)"
    r"|what brings you"
    r"|what are you (?:looking for|trying to do))",
    re.IGNORECASE,
)
"""The agent asking what the user wants (searched in the message with its whitespace collapsed).
Alternatives of literal words only, no nested quantifiers: matching is linear in the message length."""


class ScriptedUser:
    """Answers from the case's user spec.

    For each agent message: the next scripted turn is said if it has no ``when`` or its pattern matches;
    otherwise, when the case has a ``goal`` and the agent asks what the user wants
    (:data:`ASKS_WHAT_USER_WANTS`), the goal is said, followed by any fact the message mentions;
    otherwise every fact whose name the message mentions is told; otherwise a question gets "I don't
    know." and a statement ends the conversation.
    """

    answers_at_once = True
    """Its replies cost no model call: over MCP, where the user is a tool, a short tool timeout covers them."""

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
        goal = self.spec.goal
        if goal is not None and ASKS_WHAT_USER_WANTS.search(" ".join(text.split())):
            return f"{goal} {'; '.join(told)}" if told else goal
        if told:
            return "; ".join(told)
        if "?" in text:
            return "I don't know."
        return None
