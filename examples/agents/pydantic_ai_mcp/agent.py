"""A Pydantic AI agent that reaches its tools over MCP, evaluated by passhat as a program per trial::

    passhat run refunds --agent cmd:"python examples/agents/pydantic_ai_mcp/agent.py"

or as a service that takes many trials (``python agent.py --serve 8600``, then ``--agent
http://127.0.0.1:8600/agent``), which imports Pydantic AI once instead of once per trial.

It knows nothing of passhat but the start message: the trial's MCP URL and bearer token go into
``MCPToolset``, the policy becomes the agent's instructions, the instruction its prompt. The model is any
chat-completions endpoint (``OPENAI_BASE_URL``, ``OPENAI_API_KEY``, ``OPENAI_MODEL``).

Three settings differ from Pydantic AI's defaults, and each is what a fault case needs (docs/agents.md,
"Recipes"):

- ``tool_error_behavior="failed"``: a tool's error reaches the model as the tool's result. The default
  (``"retry"``) turns it into a retry request counted against ``max_retries`` (1 by default), so the second
  error in a run (a refused write, then a failed e-mail) ends the run with "exceeded max retries count".
- ``read_timeout``: the start message's ``tool_timeout_s``. The default is 5 minutes, so a withheld answer
  (a planned timeout, a response lost after a write) holds the trial until passhat's time limit ends it.
- ``max_retries=3``: a timed-out call is a protocol error, which Pydantic AI always treats as a retry, so a
  case with two timeouts needs more than one.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

from pydantic_ai import Agent, UsageLimits
from pydantic_ai.mcp import MCPToolset
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

sys.path.insert(0, str(Path(__file__).parents[1]))
from trial_service import policy_of, serve_trials  # noqa: E402  (examples/agents/trial_service.py)

STOP_TOKEN = "###DONE###"
INSTRUCTIONS = ("Follow this policy exactly. Use the tools; never invent ids or amounts. Ask the user with "
                f"send_message_to_user when you need something. End your final answer with {STOP_TOKEN}.\n\n{{policy}}")


async def run_trial(start: dict[str, Any], *, model: str, base_url: str | None, api_key: str) -> dict[str, Any]:
    """One trial: the agent, its MCP connection to the trial, and its answer ``{"reply", "usage"}``."""
    tools = MCPToolset(start["mcp_url"], headers={"Authorization": f"Bearer {start['token']}"},
                       tool_error_behavior="failed", read_timeout=start["tool_timeout_s"], max_retries=3)
    chat = OpenAIChatModel(model, provider=OpenAIProvider(base_url=base_url, api_key=api_key))
    agent = Agent(chat, instructions=INSTRUCTIONS.format(policy=policy_of(start)), toolsets=[tools])
    async with agent:
        result = await agent.run(start["instruction"], usage_limits=UsageLimits(request_limit=50))
    reply = str(result.output or "").replace(STOP_TOKEN, "").strip() or None
    usage = result.usage()
    return {"reply": reply, "usage": {"model": model, "input_tokens": usage.input_tokens,
                                      "output_tokens": usage.output_tokens}}


def answer(start: dict[str, Any]) -> dict[str, Any]:
    return asyncio.run(run_trial(start, model=os.environ.get("OPENAI_MODEL", "gpt-4o-mini"),
                                 base_url=os.environ.get("OPENAI_BASE_URL"),
                                 api_key=os.environ.get("OPENAI_API_KEY") or "none"))


def main() -> None:
    if sys.argv[1:2] == ["--serve"]:
        serve_trials(answer, port=int(sys.argv[2]))
    else:
        print(json.dumps(answer(json.loads(os.environ["PASSHAT_START"]))))


if __name__ == "__main__":
    sys.exit(main())
