"""A tool-using agent served over HTTP with FastAPI, evaluated by passhat as ``--agent http://HOST:PORT/agent``.

passhat POSTs each trial's start message (the task, the policy, the trial's tool URL and bearer token) to
``/agent`` and waits for ``{"reply": ...}``. The agent here is a chat-completions tool loop with the
official ``openai`` SDK; it reaches the trial's tools and the user through :class:`passhat.client.RemoteEpisode`
(the plain HTTP tool API) and reports each model call's tokens and latency as it goes::

    OPENAI_BASE_URL=... OPENAI_MODEL=... uvicorn --factory --app-dir examples/agents/fastapi_service app:create_app --port 8000
    passhat run refunds --agent http://127.0.0.1:8000/agent

Your own service would keep its agent as it is and only wrap it like ``run_trial`` below: one request per
trial, tools through the trial's URLs, the final reply in the response.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

from fastapi import FastAPI
from openai import AsyncOpenAI

from passhat.client import RemoteEpisode, TrialOver
from passhat.serve import AgentReply, TrialStart

STOP_TOKEN = "###DONE###"
MAX_MODEL_CALLS = 50
SYSTEM = ("Follow this policy exactly. Use the tools; never invent ids or amounts. End your final message to the user "
          f"with {STOP_TOKEN}.\n\n{{policy}}")


async def tool_loop(episode: RemoteEpisode, client: AsyncOpenAI, model: str) -> str | None:
    """Model turns until the model says it is done: tool calls go to the trial, text goes to the user."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM.format(policy=episode.policy)},
                                      {"role": "user", "content": episode.instruction}]
    tools = [tool.openai_spec() for tool in episode.tools]
    for _ in range(MAX_MODEL_CALLS):
        started = time.monotonic()
        completion = await client.chat.completions.create(model=model, messages=messages, tools=tools,  # type: ignore[arg-type]
                                                          seed=episode.seed, timeout=episode.remaining_s())
        if completion.usage is not None:
            episode.report_usage(model=model, input_tokens=completion.usage.prompt_tokens,
                                 output_tokens=completion.usage.completion_tokens, latency_s=time.monotonic() - started)
        message = completion.choices[0].message
        calls = message.tool_calls or []
        messages.append({"role": "assistant", "content": message.content,
                         **({"tool_calls": [c.model_dump() for c in calls]} if calls else {})})
        for call in calls:
            try:
                arguments = json.loads(call.function.arguments or "{}")
            except ValueError:
                arguments = call.function.arguments  # passed on as sent: the tool boundary records it as invalid
            result = await episode.call(call.function.name, arguments)  # a timeout comes back as an error result
            messages.append({"role": "tool", "tool_call_id": call.id, "content": result.text()})
        text = (message.content or "").replace(STOP_TOKEN, "").strip()
        if STOP_TOKEN in (message.content or ""):
            return text or None
        if calls:
            continue
        if not text:
            return None
        answer = await episode.say(text)
        if answer is None:  # the user has left
            return None
        messages.append({"role": "user", "content": answer})
    raise RuntimeError(f"no final answer after {MAX_MODEL_CALLS} model calls")


def create_app(*, model: str | None = None, base_url: str | None = None, api_key: str | None = None) -> FastAPI:
    """The service; settings default to ``OPENAI_MODEL``, ``OPENAI_BASE_URL`` and ``OPENAI_API_KEY``."""
    app = FastAPI(title="passhat example agent")
    model = model or os.environ.get("OPENAI_MODEL", "gpt-4o-mini")
    client = AsyncOpenAI(base_url=base_url or os.environ.get("OPENAI_BASE_URL"),
                         api_key=api_key or os.environ.get("OPENAI_API_KEY") or "not-needed-locally")

    @app.post("/agent")
    async def run_trial(start: TrialStart) -> AgentReply:
        async with RemoteEpisode.connect(start) as episode:
            try:
                return AgentReply(reply=await tool_loop(episode, client, model))
            except TrialOver:  # a budget ran out: passhat has already ended the trial
                return AgentReply(reply=None)

    return app
