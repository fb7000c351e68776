"""A LangGraph agent whose tools come from the trial's MCP server through langchain-mcp-adapters, evaluated
by passhat as a program per trial::

    passhat run refunds --agent cmd:"python examples/agents/langgraph_mcp/agent.py"

or as a service that takes many trials (``python agent.py --serve 8602``, then ``--agent
http://127.0.0.1:8602/agent``), which imports LangChain once instead of once per trial.

It knows nothing of passhat but the start message: the trial's MCP URL and bearer token make the MCP
session, the policy becomes the system prompt, the instruction the first message. The model is any
chat-completions endpoint (``OPENAI_BASE_URL``, ``OPENAI_API_KEY``, ``OPENAI_MODEL``) through
``langchain-openai``.

Three choices differ from the adapters' and LangGraph's defaults, and each is what a fault case needs
(docs/agents.md, "Recipes"):

- one MCP session for the trial (``client.session`` and ``load_mcp_tools``), not ``client.get_tools()``,
  which opens a session (and an ``initialize`` handshake) for every tool call;
- ``read_timeout_seconds`` on that session: the start message's ``tool_timeout_s``. Without it a withheld
  answer (a planned timeout, a response lost after a write) waits for the transport's 30 s read timeout;
- ``handle_tool_errors`` on the ``ToolNode`` for every exception: the adapters return a tool's own error
  (``isError``) to the model, but a timed-out call raises, and LangGraph's default handler re-raises it,
  ending the run with an ``ExceptionGroup`` instead of letting the model decide what to do.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage
from langchain_mcp_adapters.client import MultiServerMCPClient
from langchain_mcp_adapters.tools import load_mcp_tools
from langchain_openai import ChatOpenAI
from langgraph.prebuilt import ToolNode, create_react_agent

sys.path.insert(0, str(Path(__file__).parents[1]))
from trial_service import policy_of, serve_trials  # noqa: E402  (examples/agents/trial_service.py)

STOP_TOKEN = "###DONE###"
INSTRUCTIONS = ("Follow this policy exactly. Use the tools; never invent ids or amounts. Ask the user with "
                f"send_message_to_user when you need something. End your final answer with {STOP_TOKEN}.\n\n{{policy}}")


def tool_error(error: Exception) -> str:
    """What the model reads when a call raised (a timeout, a dropped connection): the error, so that it can
    tell a write that may have happened from one that was refused."""
    return f"ERROR: {error}"


async def run_trial(start: dict[str, Any], *, model: str, base_url: str | None, api_key: str) -> dict[str, Any]:
    """One trial: the agent, its MCP session with the trial, and its answer ``{"reply", "usage"}``."""
    timeout = float(start["tool_timeout_s"])
    client = MultiServerMCPClient({"trial": {
        "transport": "streamable_http", "url": start["mcp_url"],
        "headers": {"Authorization": f"Bearer {start['token']}"},
        "session_kwargs": {"read_timeout_seconds": timedelta(seconds=timeout)}}})
    chat = ChatOpenAI(model=model, base_url=base_url, api_key=api_key, max_retries=0)
    async with client.session("trial") as session:
        tools = ToolNode(await load_mcp_tools(session), handle_tool_errors=tool_error)
        agent = create_react_agent(chat, tools, prompt=INSTRUCTIONS.format(policy=policy_of(start)))
        state = await agent.ainvoke({"messages": [("user", start["instruction"])]}, {"recursion_limit": 100})
    answers = [m for m in state["messages"] if isinstance(m, AIMessage)]
    text = answers[-1].text if answers else ""
    reply = (text() if callable(text) else str(text)).replace(STOP_TOKEN, "").strip() or None
    tokens = [m.usage_metadata or {} for m in answers]
    return {"reply": reply, "usage": {"model": model, "input_tokens": sum(t.get("input_tokens", 0) for t in tokens),
                                      "output_tokens": sum(t.get("output_tokens", 0) for t in tokens)}}


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
