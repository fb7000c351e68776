"""Adding a model call to a :class:`~passhat.episode.Usage`, for model roles other than the agent.

The agent reports through ``episode.report_usage``; the LLM user and the judge keep their own
``Usage`` so the run's cost can show them apart (the record's ``user_usage`` and ``judge_usage``).
"""

from __future__ import annotations

from passhat.episode import Usage
from passhat.llm.chat import ModelReply
from passhat.llm.pricing import PriceTable


def add_reply(usage: Usage, reply: ModelReply, prices: PriceTable, model: str) -> float:
    """Add one call's tokens and cost (priced by the requested model name, then the served one)."""
    price = prices.price(model) or prices.price(reply.model)
    cost = 0.0 if price is None else price.cost(reply.input_tokens, reply.output_tokens)
    usage.input_tokens += reply.input_tokens
    usage.output_tokens += reply.output_tokens
    usage.cost += cost
    usage.model_calls += 1
    if model not in usage.models:
        usage.models.append(model)
    if usage.time_to_first_token_s is None:
        usage.time_to_first_token_s = reply.time_to_first_token_s
    return cost
