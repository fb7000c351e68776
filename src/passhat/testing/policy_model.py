"""A fake model that plays a reference playbook, so a real agent framework makes the reference agent's decisions.

Give :func:`policy_model` to :class:`~passhat.testing.fake_models.FakeModelServer` and point any agent that
drives a chat model (the OpenAI chat-completions or Anthropic messages wire format) at it: the model name
picks the style (``careful`` or ``hasty``, also ``policy-careful`` …), and every answer is what the built-in
reference agent of that style would do next. An example agent built on a framework then reaches exactly the
in-process reference agent's verdicts, and any difference is the framework's or the transport's doing.

On each request the conversation is rebuilt as a history of events: the first user message is the
instruction; an assistant tool call plus its tool message is a call and its result; assistant text plus
the next user message is a turn with the user (so is a call of ``send_message_to_user``, the MCP bridge's
way to reach the user). The playbook is re-run from the start against a replay episode that answers from
that history; the first thing it asks for that the history does not have yet is the answer: that tool
call, that text for the user (as a ``send_message_to_user`` call when the request offers that tool), or
the final reply followed by :data:`STOP_TOKEN`. It is deterministic, so a retried request gets the same
answer and one server serves any number of concurrent trials.

Tool results come back as text. The convention is :meth:`passhat.episode.ToolResult.text`: a success is
its JSON, a failure ``ERROR: <error>``. Parsing is lenient about how agents and frameworks wrap results:
MCP text-content blocks (``{"type": "text", "text": ...}``, alone or in a list), the plain HTTP API's
``{"ok": ..., "result"|"error": ...}`` body, Pydantic AI's ``{"error": ...}`` around a failed tool return (no
passhat tool succeeds with exactly that object), and error texts with no prefix at all (an MCP ``isError``
result reaches the model as its bare text). The rule that makes the last one safe: every success of a
passhat tool is JSON (a string result is a JSON string), so text that is not JSON is an error.

Limits: ``flaky`` is not offered (its lapses need the trial's seed, which a framework does not pass to
the model); one tool call per answer (the reference agents act one step at a time); and a history that
departs from the playbook (different arguments, a call it would not make) is answered with HTTP 400
naming the step, since a real model could not be replayed past it either.

To try an agent by hand: ``python -m passhat.testing.policy_model --port 8400`` serves it until interrupted.
"""

from __future__ import annotations

import asyncio
import functools
import importlib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from passhat.episode import ToolResult
from passhat.testing.fake_models import FakeModelServer, FakeRequest, Script, ToolUse, Turn

STOP_TOKEN = "###DONE###"
"""Ends the final reply (the in-process ``openai:``/``anthropic:`` agents stop on it; strip it elsewhere)."""
USER_TOOL = "send_message_to_user"
"""The MCP bridge's tool for talking to the user."""
STYLES = ("careful", "hasty")
USER_LEFT = re.compile(r"^\(?the user has left", re.IGNORECASE)
"""How ``send_message_to_user`` says the user has gone (passhat's MCP bridge answers with a sentence)."""
ERROR_WRAPPERS = (
    re.compile(r"^ERROR:\s*", re.IGNORECASE),
    re.compile(r"^An error occurred while running the tool\.(?: Please try again\.)?(?: Error:)?\s*", re.IGNORECASE),
    re.compile(r"^Error (?:running|invoking) (?:MCP )?tool \S+(?: on server '[^']*')?:\s*", re.IGNORECASE),
)
"""Prefixes around an error text (passhat's own, and the OpenAI Agents SDK's), removed so the playbook
classifies the error itself (``timeout: ...``, ``permission denied: ...``)."""


# --- the conversation as events -------------------------------------------------------------------------


@dataclass(frozen=True)
class Call:
    """A tool call the model made and the result it got back."""

    name: str
    arguments: Any
    result: ToolResult


@dataclass(frozen=True)
class Said:
    """A message to the user and the answer (``None``: the user left)."""

    text: str
    answer: str | None


Event = Call | Said


@dataclass
class Conversation:
    """A request's conversation: the instruction, the events since, and what the agent offers."""

    instruction: str
    events: list[Event] = field(default_factory=list)
    tools: list[str] = field(default_factory=list)


def parse_tool_text(text: str) -> ToolResult:
    """A tool result as an agent fed it back to the model (see the module docstring for the convention)."""
    text = _unwrap(text.strip())
    for wrapper in ERROR_WRAPPERS:
        if wrapper.match(text):
            return ToolResult(ok=False, error=_strip_errors(text))
    try:
        value = json.loads(text)
    except ValueError:
        return ToolResult(ok=False, error=text)  # a success is always JSON
    if isinstance(value, dict) and isinstance(value.get("ok"), bool) and set(value) <= {"ok", "result", "error", "limit"}:
        if value["ok"]:
            return ToolResult(ok=True, content=value.get("result"))
        return ToolResult(ok=False, error=str(value.get("error")))
    if isinstance(value, dict) and set(value) == {"error"}:  # Pydantic AI's wrapper around a failed tool return
        error = value["error"]
        return ToolResult(ok=False, error=_strip_errors(error if isinstance(error, str) else json.dumps(error)))
    return ToolResult(ok=True, content=value)


def _strip_errors(text: str) -> str:
    changed = True
    while changed:
        changed = False
        for wrapper in ERROR_WRAPPERS:
            stripped = wrapper.sub("", text, count=1)
            if stripped != text:
                text, changed = _unwrap(stripped.strip()), True
    return text


def _unwrap(text: str) -> str:
    """The text inside MCP text-content blocks (``{"type": "text", "text": ...}`` or a list of them)."""
    while text[:1] in ("{", "["):
        try:
            value = json.loads(text)
        except ValueError:
            return text
        blocks = value if isinstance(value, list) else [value]
        if not blocks or not all(isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)
                                 for b in blocks):
            return text
        text = "\n".join(b["text"] for b in blocks).strip()
    return text


def _content_text(content: Any) -> str:
    """Message content as text: a string, or the text of its parts (text blocks, Anthropic tool results)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(_content_text(b.get("text", b.get("content"))) for b in content if isinstance(b, dict))
    return "" if content is None else str(content)


def _arguments(raw: Any) -> Any:
    if isinstance(raw, str):
        try:
            return json.loads(raw) if raw.strip() else {}
        except ValueError:
            return raw
    return raw


def _said(text: str, answer: str | None) -> Said:
    if answer is not None and USER_LEFT.match(_unwrap(answer.strip())):
        answer = None
    return Said(text, answer)


def _call(name: str, arguments: Any, result_text: str | None) -> Event:
    if name == USER_TOOL:
        text = arguments.get("text", "") if isinstance(arguments, dict) else str(arguments)
        return _said(text, None if result_text is None else _unwrap(result_text.strip()))
    if result_text is None:
        raise ValueError(f"the tool call {name} has no result in the conversation")
    return Call(name, arguments, parse_tool_text(result_text))


def openai_conversation(body: dict[str, Any]) -> Conversation:
    """Events of a chat-completions request."""
    messages = [m for m in body.get("messages", []) if m.get("role") not in ("system", "developer")]
    if not messages or messages[0].get("role") != "user":
        raise ValueError("the conversation does not start with a user message (the instruction)")
    conv = Conversation(_content_text(messages[0].get("content")),
                        tools=[t.get("function", t).get("name", "") for t in body.get("tools") or []])
    results = {m.get("tool_call_id"): _content_text(m.get("content")) for m in messages if m.get("role") == "tool"}
    for i, m in enumerate(messages[1:], start=1):
        if m.get("role") != "assistant":
            continue
        if m.get("tool_calls"):
            for c in m["tool_calls"]:
                fn = c.get("function", {})
                conv.events.append(_call(fn.get("name", ""), _arguments(fn.get("arguments")), results.get(c.get("id"))))
        elif i + 1 < len(messages) and messages[i + 1].get("role") == "user":
            conv.events.append(_said(_content_text(m.get("content")), _content_text(messages[i + 1].get("content"))))
    return conv


def anthropic_conversation(body: dict[str, Any]) -> Conversation:
    """Events of an Anthropic messages request."""
    messages = body.get("messages", [])
    if not messages or messages[0].get("role") != "user":
        raise ValueError("the conversation does not start with a user message (the instruction)")
    conv = Conversation(_content_text(messages[0].get("content")), tools=[t.get("name", "") for t in body.get("tools") or []])
    results: dict[str, str] = {}
    for m in messages:
        for b in m.get("content") if isinstance(m.get("content"), list) else []:
            if isinstance(b, dict) and b.get("type") == "tool_result":
                text = _content_text(b.get("content"))
                results[b.get("tool_use_id", "")] = f"ERROR: {text}" if b.get("is_error") else text
    for i, m in enumerate(messages[1:], start=1):
        if m.get("role") != "assistant":
            continue
        blocks = m["content"] if isinstance(m.get("content"), list) else [{"type": "text", "text": m.get("content")}]
        uses = [b for b in blocks if isinstance(b, dict) and b.get("type") == "tool_use"]
        for b in uses:
            conv.events.append(_call(b.get("name", ""), b.get("input", {}), results.get(b.get("id", ""))))
        if not uses and i + 1 < len(messages) and messages[i + 1].get("role") == "user":
            conv.events.append(_said(_content_text(blocks), _content_text(messages[i + 1].get("content"))))
    return conv


# --- replaying the playbook -----------------------------------------------------------------------------


class _Decided(Exception):
    """The playbook asked for something the history does not have: that is the model's answer."""

    def __init__(self, turn: Turn) -> None:
        self.turn = turn


class Diverged(Exception):
    """The history departs from what the playbook does."""


class ReplayEpisode:
    """What a playbook reads of an episode, answered from a conversation's history."""

    def __init__(self, conversation: Conversation, domain: str) -> None:
        self.domain = domain
        self.seed = 0
        self.instruction = conversation.instruction
        self._conv = conversation
        self._next = 0

    def _event(self) -> Event | None:
        if self._next >= len(self._conv.events):
            return None
        event = self._conv.events[self._next]
        self._next += 1
        return event

    async def call(self, name: str, arguments: dict[str, Any] | None = None) -> ToolResult:
        arguments = {} if arguments is None else arguments
        event = self._event()
        if event is None:
            raise _Decided(Turn(tool_calls=[ToolUse(name, arguments)]))
        if not isinstance(event, Call) or event.name != name or _canonical(event.arguments) != _canonical(arguments):
            raise Diverged(f"step {self._next}: the playbook calls {name} {_canonical(arguments)}, "
                           f"the conversation has {_describe(event)}")
        return event.result

    async def say(self, text: str) -> str | None:
        event = self._event()
        if event is None:
            if USER_TOOL in self._conv.tools:
                raise _Decided(Turn(tool_calls=[ToolUse(USER_TOOL, {"text": text})]))
            raise _Decided(Turn(text=text))
        if not isinstance(event, Said):
            raise Diverged(f"step {self._next}: the playbook says {text!r} to the user, the conversation has "
                           f"{_describe(event)}")
        return event.answer

    def finish(self, reply: str | None) -> Turn:
        if self._next < len(self._conv.events):
            raise Diverged(f"step {self._next + 1}: the playbook has finished, the conversation goes on with "
                           f"{_describe(self._conv.events[self._next])}")
        return Turn(text=f"{reply} {STOP_TOKEN}" if reply else STOP_TOKEN)


def _canonical(arguments: Any) -> str:
    return json.dumps(arguments, sort_keys=True, default=str)


def _describe(event: Event | None) -> str:
    if isinstance(event, Call):
        return f"a call of {event.name} {_canonical(event.arguments)}"
    if isinstance(event, Said):
        return f"a message to the user {event.text!r}"
    return "nothing"


def style_of(model: str) -> str:
    """The playbook style a model name asks for: its last word (``careful``, ``policy-hasty``, ``x/careful``)."""
    word = re.split(r"[-/:_ ]", model.strip())[-1].lower()
    if word not in STYLES:
        raise ValueError(f"model {model!r}: the policy model plays {' or '.join(STYLES)}; name it e.g. "
                         "'policy-careful' ('flaky' needs the trial seed, which frameworks do not pass on)")
    return word


@functools.cache
def _builtin_tools() -> dict[str, frozenset[str]]:
    from passhat.domain import BUILTIN_DOMAINS, load_domain

    return {name: frozenset(t.name for t in load_domain(name).tool_list()) for name in BUILTIN_DOMAINS}


def domain_of(tools: list[str]) -> str:
    """The built-in domain whose tools the request offers (the one with the most of them)."""
    offered = set(tools)
    overlap = {name: len(offered & names) for name, names in _builtin_tools().items()}
    best = max(overlap.values(), default=0)
    winners = [name for name, n in overlap.items() if n == best]
    if best == 0 or len(winners) > 1:
        raise ValueError(f"cannot tell the domain from the request's tools {sorted(offered)}; "
                         "pass policy_model(domain=...)")
    return winners[0]


async def next_turn(conversation: Conversation, style: str, domain: str) -> Turn:
    """What the ``style`` reference agent does next in this conversation."""
    playbook = importlib.import_module(f"passhat.agents.reference.{domain}")
    episode = ReplayEpisode(conversation, domain)
    try:
        reply = await playbook.play(episode, style)
    except _Decided as decided:
        return decided.turn
    return episode.finish(reply)


def policy_model(domain: str | None = None) -> Script:
    """A :class:`FakeModelServer` script playing the reference playbooks (see the module docstring).

    ``domain`` names the built-in domain; by default it is recognised from the tools each request offers.
    A request the model cannot answer (unknown style, a history that departs from the playbook) gets
    HTTP 400 with the reason, which the agent's SDK raises.
    """
    read: dict[str, Callable[[dict[str, Any]], Conversation]] = {
        "openai": openai_conversation, "anthropic": anthropic_conversation}

    def script(req: FakeRequest) -> Turn:
        try:
            style = style_of(req.model)
            conversation = read[req.api](req.body)
            turn = asyncio.run(next_turn(conversation, style, domain or domain_of(conversation.tools)))
        except (ValueError, Diverged) as exc:
            return Turn(always=400, text=f"policy model: {exc}")
        return turn

    return script


def main(argv: list[str] | None = None) -> None:
    """Serve the policy model until interrupted (for running the example agents by hand)."""
    import argparse
    import time

    parser = argparse.ArgumentParser(prog="python -m passhat.testing.policy_model",
                                     description="A fake chat model playing passhat's reference agents (careful, hasty).")
    parser.add_argument("--port", type=int, default=8400, help="port on 127.0.0.1 (0: a free one)")
    parser.add_argument("--domain", default=None, help="built-in domain (default: recognised from the tools offered)")
    args = parser.parse_args(argv)
    with FakeModelServer(policy_model(args.domain), port=args.port) as server:
        print(f"policy model on {server.openai_url} (OpenAI) and {server.anthropic_url} (Anthropic); "
              "models: policy-careful, policy-hasty. Ctrl-C stops it.", flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass


__all__ = ["STOP_TOKEN", "Call", "Conversation", "Diverged", "ReplayEpisode", "Said", "anthropic_conversation",
           "domain_of", "main", "next_turn", "openai_conversation", "parse_tool_text", "policy_model", "style_of"]


if __name__ == "__main__":
    main()
