"""The model-driven agent (``openai:MODEL``, ``anthropic:MODEL``): one loop for every provider, over the
model layer (:mod:`passhat.llm`).

The policy is the system prompt and the case's instruction the first user message. Each model turn
either calls tools (all of them, parallel calls included, go through ``episode.call`` in order and
their results go back as tool messages) or talks to the user (``episode.say``; the user's answer is the
next user message). The loop ends when the model emits the stop token, when the user has left, or when
a budget runs out (model calls here; steps, cost and time in the episode).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from passhat.episode import Episode, LimitExceeded
from passhat.llm import RetryPolicy, chat_model
from passhat.llm.chat import STOP_TOKEN, CallOptions, ChatMessage, ChatModel, ModelReply, split_stop, text_hash
from passhat.llm.pricing import PriceTable, load_price_table

SYSTEM_TEMPLATE = """You are an assistant that does tasks for the user with the tools provided, following the policy \
below exactly. Use the tools to read and change the system; never invent ids, amounts or results. Talk to the user in \
plain text when you need information or to report what you did. When the task is finished (or you have explained why \
it cannot be done) and you have told the user the outcome, end that final message with {stop_token}.

# Policy

{policy}"""
"""The default system prompt; ``{policy}`` is the domain's policy document."""


@dataclass(frozen=True)
class AgentSettings:
    """Pinned settings of a model-driven agent; all of them go into the run's manifest."""

    temperature: float | None = None
    """``None`` uses the provider's default (recorded as such)."""
    max_tokens: int | None = None
    max_model_calls: int = 50
    """Model calls per trial before the trial is stopped as a step limit."""
    stop_token: str = STOP_TOKEN
    system_template: str = SYSTEM_TEMPLATE
    send_seed: bool = True
    """Send the trial's agent seed with each call (OpenAI-compatible servers use it; Anthropic has none)."""
    extra: dict[str, Any] = field(default_factory=dict)
    """Extra request fields for the provider, passed through unchanged."""


class ModelAgent:
    """``await agent(episode)`` driven by a chat model."""

    def __init__(self, model: ChatModel, settings: AgentSettings | None = None, prices: PriceTable | None = None) -> None:
        self.model = model
        self.settings = settings or AgentSettings()
        self.prices = prices or PriceTable()
        self.prompt_hash = text_hash(self.settings.system_template, self.settings.stop_token)

    @property
    def spec(self) -> str:
        return f"{self.model.provider}:{self.model.model}"

    def describe(self) -> dict[str, Any]:
        """What the manifest records: model, endpoint, sampling, prompt hash, price."""
        s = self.settings
        return {
            "spec": self.spec, **self.model.describe(), "temperature": s.temperature, "max_tokens": s.max_tokens,
            "seed": "per trial: episode.seed (derived from the run seed)" if s.send_seed else None,
            "stop_token": s.stop_token, "max_model_calls": s.max_model_calls, "prompt_hash": self.prompt_hash,
            "price": self.prices.describe([self.model.model])[self.model.model],
        }

    def _report(self, episode: Episode, reply: ModelReply) -> None:
        price = self.prices.price(self.model.model) or self.prices.price(reply.model)
        cost = 0.0 if price is None else price.cost(reply.input_tokens, reply.output_tokens)
        episode.report_usage(
            input_tokens=reply.input_tokens, output_tokens=reply.output_tokens, cost=cost, model=self.model.model,
            time_to_first_token_s=reply.time_to_first_token_s, latency_s=reply.latency_s, prompt_hash=self.prompt_hash,
        )

    async def __call__(self, episode: Episode) -> str | None:
        s = self.settings
        system = s.system_template.format(policy=episode.policy, stop_token=s.stop_token)
        options = CallOptions(temperature=s.temperature, seed=episode.seed if s.send_seed else None,
                              max_tokens=s.max_tokens, extra=dict(s.extra))
        tools = episode.tools
        history = [ChatMessage(role="user", text=episode.instruction)]
        for _ in range(s.max_model_calls):
            reply = await self.model.complete(system, history, tools, options)
            self._report(episode, reply)
            history.append(ChatMessage(role="assistant", text=reply.text, tool_calls=tuple(reply.tool_calls)))
            text, done = split_stop(reply.text, s.stop_token)
            for call in reply.tool_calls:
                result = await episode.call(call.name, call.arguments)
                history.append(ChatMessage(role="tool", text=result.text(), tool_call_id=call.id, is_error=not result.ok))
            if done:
                return text or None
            if reply.tool_calls:
                continue
            if not text:  # nothing to say and nothing to do: the model has finished
                return None
            answer = await episode.say(text)
            if answer is None:
                return None
            history.append(ChatMessage(role="user", text=answer))
        raise LimitExceeded("step_limit", f"model-call limit reached: {s.max_model_calls} calls without finishing")


def model_agent(
    spec: str,
    *,
    base_url: str | None = None,
    settings: AgentSettings | None = None,
    retry: RetryPolicy | None = None,
    prices: PriceTable | Path | None = None,
) -> ModelAgent:
    """The agent for ``openai:MODEL`` / ``anthropic:MODEL``; ``prices`` is a table or a price file."""
    table = prices if isinstance(prices, PriceTable) else load_price_table(prices)
    return ModelAgent(chat_model(spec, base_url=base_url, retry=retry), settings, table)
