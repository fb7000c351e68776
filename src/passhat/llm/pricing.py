"""Model prices, so every trial's cost is recorded and cost per success can be gated.

Prices change and differ per contract, so the built-in table is a starting point (list prices in USD
per million tokens as published by the providers; check them) and users extend or override it with a
YAML/JSON file (``--prices FILE`` or the ``PASSHAT_PRICES`` environment variable)::

    # USD per million tokens
    gpt-4.1: {input: 2.00, output: 8.00}
    my-vllm-model: {input: 0, output: 0}

A model is looked up by exact name, then by the longest listed prefix (``claude-sonnet-4-5-20250929``
finds ``claude-sonnet-4-5``). A model with no price costs 0 and is listed as unpriced in the manifest, so
a cost gate can see that it was not measured rather than that it was free.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from passhat.errors import PasshatError
from passhat.validation import load_yaml

PRICES_ENV = "PASSHAT_PRICES"


@dataclass(frozen=True)
class Price:
    """USD per million input and output tokens: finite and not negative, or every cost of the run would be
    NaN (and every cost statistic and gate with it)."""

    input: float
    output: float

    def __post_init__(self) -> None:
        for name in ("input", "output"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
                raise ValueError(f"{name}: prices must be numbers, finite and ≥ 0 (USD per million tokens), got {value!r}")

    def cost(self, input_tokens: int, output_tokens: int) -> float:
        return (input_tokens * self.input + output_tokens * self.output) / 1_000_000


BUILTIN_PRICES: dict[str, Price] = {
    "gpt-4o-mini": Price(0.15, 0.60),
    "gpt-4o": Price(2.50, 10.00),
    "gpt-4.1-nano": Price(0.10, 0.40),
    "gpt-4.1-mini": Price(0.40, 1.60),
    "gpt-4.1": Price(2.00, 8.00),
    "gpt-5-nano": Price(0.05, 0.40),
    "gpt-5-mini": Price(0.25, 2.00),
    "gpt-5": Price(1.25, 10.00),
    "o4-mini": Price(1.10, 4.40),
    "o3": Price(2.00, 8.00),
    "claude-3-5-haiku": Price(0.80, 4.00),
    "claude-haiku-4-5": Price(1.00, 5.00),
    "claude-3-5-sonnet": Price(3.00, 15.00),
    "claude-3-7-sonnet": Price(3.00, 15.00),
    "claude-sonnet-4": Price(3.00, 15.00),
    "claude-opus-4": Price(15.00, 75.00),
    "claude-opus-4-5": Price(5.00, 25.00),
}


class PriceTable:
    """Prices by model name (exact, then longest prefix)."""

    def __init__(self, prices: dict[str, Price] | None = None) -> None:
        self.prices = dict(BUILTIN_PRICES if prices is None else prices)

    def price(self, model: str) -> Price | None:
        if model in self.prices:
            return self.prices[model]
        bare = model.rpartition("/")[2]  # "openai/gpt-4o" on routers
        hits = [k for k in self.prices if bare.startswith(k) or model.startswith(k)]
        return self.prices[max(hits, key=len)] if hits else None

    def cost(self, model: str, input_tokens: int, output_tokens: int) -> float:
        price = self.price(model)
        return 0.0 if price is None else price.cost(input_tokens, output_tokens)

    def describe(self, models: list[str]) -> dict[str, Any]:
        """For the manifest: the price used for each model (``None``: unpriced, recorded as cost 0)."""
        out: dict[str, Any] = {}
        for m in models:
            p = self.price(m)
            out[m] = None if p is None else {"input_per_mtok": p.input, "output_per_mtok": p.output}
        return out

    def extended(self, more: dict[str, Price]) -> PriceTable:
        return PriceTable({**self.prices, **more})


def read_prices(path: Path) -> dict[str, Price]:
    """Read a YAML or JSON price file: ``{model: {input: USD/Mtok, output: USD/Mtok}}``."""
    try:
        text = path.read_text("utf-8")
        data = json.loads(text) if path.suffix == ".json" else load_yaml(text)
    except (OSError, ValueError, yaml.YAMLError) as exc:
        raise PasshatError(f"{path}: cannot read price table: {exc}") from exc
    if not isinstance(data, dict):
        raise PasshatError(f"{path}: a price table maps model names to {{input: ..., output: ...}} (USD per million tokens)")
    out: dict[str, Price] = {}
    for model, entry in data.items():
        if not isinstance(entry, dict) or set(entry) - {"input", "output"} or not entry:
            raise PasshatError(f"{path}: {model}: expected {{input: USD per Mtok, output: USD per Mtok}}, got {entry!r}")
        try:
            out[str(model)] = Price(entry.get("input", 0), entry.get("output", 0))
        except ValueError as exc:
            raise PasshatError(f"{path}: {model}.{exc}") from None
    return out


def load_price_table(path: Path | None = None) -> PriceTable:
    """Built-in prices, extended by ``$PASSHAT_PRICES`` and then by ``path`` (later wins)."""
    table = PriceTable()
    env = os.environ.get(PRICES_ENV)
    if env:
        table = table.extended(read_prices(Path(env)))
    if path is not None:
        table = table.extended(read_prices(path))
    return table
