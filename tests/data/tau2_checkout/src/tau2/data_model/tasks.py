"""Tasks as τ²'s task files give them (only the fields the fixture's tasks use)."""

import textwrap
from typing import Any

from pydantic import BaseModel

TAB = "\t"


class StructuredUserInstructions(BaseModel):
    domain: str
    reason_for_call: str
    known_info: str | None = None
    unknown_info: str | None = None
    task_instructions: str

    def __str__(self) -> str:
        lines = [f"Domain: {self.domain}", f"Reason for call:\n{textwrap.indent(self.reason_for_call, TAB)}"]
        if self.known_info is not None:
            lines.append(f"Known info:\n{textwrap.indent(self.known_info, TAB)}")
        lines.append(f"Task instructions:\n{textwrap.indent(self.task_instructions, TAB)}")
        return "\n".join(lines)


class UserScenario(BaseModel):
    persona: str | None = None
    instructions: StructuredUserInstructions | str

    def __str__(self) -> str:
        lines = [] if self.persona is None else ["Persona:", textwrap.indent(self.persona, "\t")]
        return "\n".join([*lines, "Instructions:", textwrap.indent(str(self.instructions), "\t")])


class EnvFunctionCall(BaseModel):
    env_type: str
    func_name: str
    arguments: dict[str, Any]


class InitializationData(BaseModel):
    agent_data: dict[str, Any] | None = None
    user_data: dict[str, Any] | None = None


class InitialState(BaseModel):
    initialization_data: InitializationData | None = None
    initialization_actions: list[EnvFunctionCall] | None = None
    message_history: list[Any] | None = None


class Task(BaseModel):
    id: str
    description: dict[str, Any] | None = None
    user_scenario: UserScenario
    initial_state: InitialState | None = None
    evaluation_criteria: dict[str, Any] | None = None
