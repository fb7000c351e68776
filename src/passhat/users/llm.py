"""A model-played user, for conversations a script cannot anticipate.

τ-bench's LLM user causes a large share of its failures (ending early, inventing facts), so this one is
constrained: structured instructions (why the user is calling, what they want when the case gives a
private ``user.goal``, what they know, that anything else is unknown, when to stop), a stop token,
pinned sampling (temperature 0 by default, the trial's user seed), and one rule enforced in code rather
than trusted to the prompt: when the case requires a write (a ``write`` tool in ``required_tools``),
the user does not leave before a write has committed; a premature stop is replaced by a nudge and
counted. ``max_turns`` still bounds the conversation.
The scripted user stays the default; choose this one per run (``passhat run --user openai:MODEL``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from passhat.cases import Case
from passhat.cases.model import UserSpec
from passhat.episode import Usage
from passhat.llm import CallOptions, ChatMessage, ChatModel, PriceTable, RetryPolicy, chat_model, text_hash
from passhat.llm.accounting import add_reply
from passhat.llm.chat import split_stop
from passhat.tools import Tool, ToolBoundary

USER_STOP = "###STOP###"
NUDGE = "Is it done? Please go ahead with what I asked."
"""Said instead of leaving when the user model tries to stop before the required write happened."""

USER_TEMPLATE = """You are role-playing a person who contacted an assistant (a support agent). You are the user, \
never the assistant. Stay in character for the whole conversation.

# Why you are contacting the assistant
You opened the conversation with this message:
{instruction}
{goal}
# Who you are
{persona}

# What you know
Tell these facts only when the assistant asks for them (or clearly needs them), one or two at a time:
{facts}

# What you do not know
Anything not listed above. If the assistant asks for it, say you do not know. Never invent ids, numbers, dates, \
amounts or names.

# When to stop
When the assistant has done what you asked, or has clearly explained why it cannot be done, reply with only \
{stop_token}. Do not stop while the assistant is still working, asks you a question or asks for confirmation.

# How to write
Write only your next message to the assistant: short, natural, in the language of your opening message. Do not \
describe tools or systems and do not repeat these instructions."""


GOAL_SECTION = """
# What you want (private)
{goal}

This brief is yours alone: the assistant has not seen it and knows only what you tell it. Pursue it the way \
a real person would. Do not paste or paraphrase the whole brief in one message and do not give it all away at \
once: say what you need for the current step, and give a detail when the assistant asks for it or clearly needs \
it. Do not ask for anything the brief does not want.
"""
"""Inserted after the opening message when the case has a ``user.goal`` (nothing otherwise, so a case
without a goal gets the same prompt as before goals existed)."""

TOOLS_SECTION = """
# Your own device
You have tools that act on your own device (your phone, your settings). Use them when the assistant asks you \
to check or change something, or when your brief says to, and tell the assistant what they showed. Never \
invent what a tool would show: call it.
"""
"""Appended to the prompt when the domain gives the user tools of their own (dual control, τ²-bench telecom)."""
MAX_TOOL_ROUNDS = 10
"""Tool calls the user model may chain before it must answer the agent (each round: one model call)."""


@dataclass(frozen=True)
class UserSettings:
    """Pinned settings of the model-played user (recorded in the manifest)."""

    temperature: float | None = 0.0
    max_tokens: int | None = 512
    stop_token: str = USER_STOP
    template: str = USER_TEMPLATE
    goal_section: str = GOAL_SECTION
    send_seed: bool = True


def user_instructions(spec: UserSpec, instruction: str, settings: UserSettings) -> str:
    """The structured system prompt for one case's user."""
    facts = "\n".join(f"- {k.replace('_', ' ')}: {json.dumps(v, ensure_ascii=False)}" for k, v in spec.facts.items())
    goal = ""
    if spec.goal is not None:
        if "{goal}" not in settings.template:  # a goal the user model never hears would pass unnoticed
            raise ValueError("the user template has no {goal} placeholder, but the case gives user.goal")
        goal = settings.goal_section.format(goal=spec.goal)
    return settings.template.format(
        instruction=instruction, goal=goal, persona=spec.persona or "An ordinary user of the service.",
        facts=facts or "- (nothing beyond your opening message)", stop_token=settings.stop_token,
    )


class LLMUser:
    """Answers the agent with a chat model; ``None`` when the user has left."""

    def __init__(
        self, model: ChatModel, spec: UserSpec, instruction: str, seed: int, *,
        settings: UserSettings | None = None, prices: PriceTable | None = None,
        write_done: Callable[[], bool] = lambda: True, requires_write: bool = False,
        boundary: ToolBoundary | None = None,
    ) -> None:
        self.model = model
        self.spec = spec
        self.settings = settings or UserSettings()
        self.prices = prices or PriceTable()
        self.seed = seed
        self.boundary = boundary
        self.tools: list[Tool] = list(boundary.user_tools.values()) if boundary is not None else []
        """The user's own tools (the domain's ``user_tools``): called through the boundary as the user's calls."""
        self.system = user_instructions(spec, instruction, self.settings) + (TOOLS_SECTION if self.tools else "")
        # from the user model's side, its own lines are "assistant" and the agent's are "user"
        self.history: list[ChatMessage] = [ChatMessage(role="assistant", text=instruction)]
        self.write_done = write_done
        self.requires_write = requires_write
        self.usage = Usage()
        self.replies = 0
        self.premature_stops = 0
        """Times the model tried to leave before the required write (each replaced by :data:`NUDGE`)."""

    async def reply(self, agent_text: str) -> str | None:
        if self.replies >= self.spec.max_turns:
            return None
        s = self.settings
        self.history.append(ChatMessage(role="user", text=agent_text))
        options = CallOptions(temperature=s.temperature, seed=self.seed if s.send_seed else None, max_tokens=s.max_tokens)
        answer = await self.model.complete(self.system, self.history, self.tools, options)
        add_reply(self.usage, answer, self.prices, self.model.model)
        for _ in range(MAX_TOOL_ROUNDS):
            if not answer.tool_calls or self.boundary is None:
                break
            self.history.append(ChatMessage(role="assistant", text=answer.text, tool_calls=tuple(answer.tool_calls)))
            for call in answer.tool_calls:
                record = await self.boundary.call(call.name, call.arguments, by="user")
                shown = json.dumps(record.result, ensure_ascii=False, default=str) if record.ok else f"ERROR: {record.error}"
                self.history.append(ChatMessage(role="tool", text=shown, tool_call_id=call.id, is_error=not record.ok))
            answer = await self.model.complete(self.system, self.history, self.tools, options)
            add_reply(self.usage, answer, self.prices, self.model.model)
        text, stop = split_stop(answer.text, s.stop_token)
        stop = stop or not text
        if stop and self.requires_write and not self.write_done():
            self.premature_stops += 1
            stop, text = False, NUDGE  # the text was a goodbye; what the agent must hear is "not done yet"
        if stop:
            return None
        self.history.append(ChatMessage(role="assistant", text=text))
        self.replies += 1
        return text


class LLMUserFactory:
    """Makes one :class:`LLMUser` per trial (``RunConfig.user``); ``describe()`` goes into the manifest."""

    def __init__(self, model: ChatModel, settings: UserSettings | None = None, prices: PriceTable | None = None) -> None:
        self.model = model
        self.settings = settings or UserSettings()
        self.prices = prices or PriceTable()

    def describe(self) -> dict[str, Any]:
        s = self.settings
        return {"spec": f"{self.model.provider}:{self.model.model}", **self.model.describe(),
                "temperature": s.temperature, "max_tokens": s.max_tokens, "stop_token": s.stop_token,
                "seed": "per trial: derived from the trial seed" if s.send_seed else None,
                "prompt_hash": text_hash(s.template, s.goal_section, s.stop_token, NUDGE),
                "price": self.prices.describe([self.model.model])[self.model.model]}

    def __call__(self, case: Case, seed: int, boundary: ToolBoundary) -> LLMUser:
        tools = boundary.tools
        requires_write = any(r.tool in tools and tools[r.tool].kind == "write" for r in case.required_tools)

        def write_done() -> bool:
            return any(c.kind == "write" and c.committed for c in boundary.calls)

        return LLMUser(self.model, case.user, case.instruction, seed, settings=self.settings, prices=self.prices,
                       write_done=write_done, requires_write=requires_write, boundary=boundary)


def llm_user(
    spec: str, *, base_url: str | None = None, settings: UserSettings | None = None,
    prices: PriceTable | None = None, retry: RetryPolicy | None = None,
) -> LLMUserFactory:
    """The user-simulator factory for ``openai:MODEL`` / ``anthropic:MODEL``."""
    return LLMUserFactory(chat_model(spec, base_url=base_url, retry=retry), settings, prices)
