"""An agent that calls its model through the real ``openai`` SDK itself, as most shipped agents do.

In-process: ``sdk_agent.py:MODE`` (the test provider's mode is the model name: tests/stalling.py), with
the client built on ``episode.model_urls["openai"]``. As a program: ``cmd:python sdk_agent.py MODE``, with
a client built with no arguments — the SDK reads ``OPENAI_BASE_URL`` (the relay) and ``OPENAI_API_KEY``
(passed with ``--agent-env``) from the environment. Either way it streams one answer with usage, returns
its text and reports its tokens.
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

import openai


async def ask(client: openai.AsyncOpenAI, model: str) -> tuple[str, Any]:
    """The answer's text and usage; ``slow_*`` models are asked without streaming."""
    messages: Any = [{"role": "user", "content": "Add a note: call mom."}]
    if model.startswith("slow_"):
        answer = await client.chat.completions.create(model=model, messages=messages)
        return answer.choices[0].message.content or "", answer.usage
    stream = await client.chat.completions.create(model=model, messages=messages, stream=True,
                                                  stream_options={"include_usage": True})
    text, usage = [], None
    async for chunk in stream:
        if chunk.choices and chunk.choices[0].delta.content:
            text.append(chunk.choices[0].delta.content)
        usage = chunk.usage or usage
    return "".join(text), usage


def agent_for(model: str) -> Any:
    async def agent(episode: Any) -> str:
        async with openai.AsyncOpenAI(base_url=episode.model_urls["openai"]) as client:
            text, usage = await ask(client, model)
        if usage is not None:
            episode.report_usage(model=model, input_tokens=usage.prompt_tokens, output_tokens=usage.completion_tokens)
        return text

    return agent


no_headers = agent_for("no_headers")
keepalives_only = agent_for("keepalives_only")
one_chunk_then_silence = agent_for("one_chunk_then_silence")
healthy = agent_for("healthy")
slow_unstreamed = agent_for("slow_unstreamed")


async def main(model: str) -> None:
    async with openai.AsyncOpenAI() as client:
        text, usage = await ask(client, model)
    tokens = {"model": model, "input_tokens": usage.prompt_tokens, "output_tokens": usage.completion_tokens} if usage else None
    print(json.dumps({"reply": text, "usage": tokens}))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
