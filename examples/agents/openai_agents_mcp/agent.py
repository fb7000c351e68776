"""An OpenAI Agents SDK agent that reaches its tools over MCP, evaluated by passhat as a program per trial::

    passhat run refunds --agent cmd:"python examples/agents/openai_agents_mcp/agent.py"

It knows nothing of passhat but the start message in ``PASSHAT_START``: the trial's MCP URL and bearer token
go into ``MCPServerStreamableHttp``, the policy becomes the agent's instructions, the instruction its input.
The trial's MCP server lists the domain's tools and ``send_message_to_user``, the agent's only way to
ask the user something (the tool's result is the user's answer). The model is any chat-completions endpoint
(``OPENAI_BASE_URL``, ``OPENAI_API_KEY``, ``OPENAI_MODEL``); the final reply and the run's token usage go to
stdout as ``{"reply": ..., "usage": ...}``.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import urllib.request
from typing import Any

from agents import Agent, OpenAIChatCompletionsModel, RunContextWrapper, Runner, set_tracing_disabled
from agents.mcp import MCPServerStreamableHttp
from openai import AsyncOpenAI

STOP_TOKEN = "###DONE###"
INSTRUCTIONS = ("Follow this policy exactly. Use the tools; never invent ids or amounts. Ask the user with "
                f"send_message_to_user when you need something. End your final answer with {STOP_TOKEN}.\n\n{{policy}}")


def tool_error(context: RunContextWrapper[Any], error: Exception) -> str:
    """What the model reads when a tool call fails. The SDK's default is a fixed "An error occurred while
    running the tool", which hides whether a write timed out (and may have happened) or was refused."""
    return f"ERROR: {error}"


def policy_of(start: dict[str, Any]) -> str:
    """The policy; passhat leaves a very long one out of the environment, and the trial URL always has it."""
    if start.get("policy") is not None:
        return str(start["policy"])
    request = urllib.request.Request(start["trial_url"], headers={"authorization": f"Bearer {start['token']}"})
    with urllib.request.urlopen(request, timeout=10) as response:
        return str(json.loads(response.read())["policy"])


async def run_trial(start: dict[str, Any], *, model: str, client: AsyncOpenAI, tool_timeout_s: float) -> dict[str, Any]:
    """One trial: the agent, its MCP connection to the trial, and its answer ``{"reply", "usage"}``."""
    trial_tools = MCPServerStreamableHttp(
        {"url": start["mcp_url"], "headers": {"Authorization": f"Bearer {start['token']}"}, "timeout": tool_timeout_s},
        name="passhat-trial",
        cache_tools_list=True,
        client_session_timeout_seconds=tool_timeout_s,  # a withheld answer becomes a timeout error after this
        failure_error_function=tool_error,
    )
    async with trial_tools:
        agent = Agent(name="support", instructions=INSTRUCTIONS.format(policy=policy_of(start)),
                      model=OpenAIChatCompletionsModel(model=model, openai_client=client), mcp_servers=[trial_tools])
        result = await Runner.run(agent, start["instruction"], max_turns=50)
    reply = str(result.final_output or "").replace(STOP_TOKEN, "").strip() or None
    usage = result.context_wrapper.usage
    return {"reply": reply, "usage": {"model": model, "input_tokens": usage.input_tokens,
                                      "output_tokens": usage.output_tokens}}


def main() -> None:
    start = json.loads(os.environ["PASSHAT_START"])
    set_tracing_disabled(True)  # no trace upload: the run stays offline
    client = AsyncOpenAI(base_url=os.environ.get("OPENAI_BASE_URL"), api_key=os.environ.get("OPENAI_API_KEY") or "none")
    answer = asyncio.run(run_trial(start, model=os.environ.get("OPENAI_MODEL", "gpt-4o-mini"), client=client,
                                   tool_timeout_s=start["tool_timeout_s"]))  # the start message's suggestion
    print(json.dumps(answer))


if __name__ == "__main__":
    sys.exit(main())
