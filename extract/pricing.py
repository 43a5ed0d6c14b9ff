"""Token prices per known model (USD per million tokens: input, output) and run cost accounting."""

from __future__ import annotations

from dataclasses import dataclass

#: Longest matching prefix wins; a model not listed has an "unknown" cost.
PRICES: dict[str, tuple[float, float]] = {
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-4o": (2.50, 10.00),
    "gpt-4.1-nano": (0.10, 0.40),
    "gpt-4.1-mini": (0.40, 1.60),
    "gpt-4.1": (2.00, 8.00),
    "gpt-5-nano": (0.05, 0.40),
    "gpt-5-mini": (0.25, 2.00),
    "gpt-5": (1.25, 10.00),
    "o4-mini": (1.10, 4.40),
    "o3-mini": (1.10, 4.40),
    "claude-3-haiku": (0.25, 1.25),
    "claude-3-5-haiku": (0.80, 4.00),
    "claude-haiku-4": (1.00, 5.00),
    "claude-3-5-sonnet": (3.00, 15.00),
    "claude-3-7-sonnet": (3.00, 15.00),
    "claude-sonnet-4": (3.00, 15.00),
    "claude-opus-4": (15.00, 75.00),
}


def price_of(model: str | None) -> tuple[float, float] | None:
    if not model:
        return None
    name = model.lower().split("/")[-1]
    best = max((k for k in PRICES if name.startswith(k)), key=len, default=None)
    return PRICES[best] if best else None


#: Price of a cached input token relative to an uncached one (prompt caching), longest prefix wins:
#: OpenAI's automatic caching (gpt-5 family 10%, gpt-4.1 and o-series 25%, gpt-4o 50%) and Anthropic's
#: cache reads (10%; writes cost 125%, ``CACHE_WRITE_FACTOR``).
CACHED_INPUT_FACTOR: dict[str, float] = {"gpt-5": 0.10, "gpt-4.1": 0.25, "gpt-4o": 0.50, "o3": 0.25, "o4": 0.25,
                                         "claude": 0.10}
CACHE_WRITE_FACTOR = 1.25


@dataclass(frozen=True)
class Usage:
    """Token counts. ``input_tokens`` counts every input token, cached or not; ``cached_input_tokens`` of
    them were read from the provider's prompt cache, ``cache_write_tokens`` written to it (Anthropic)."""

    input_tokens: int = 0
    output_tokens: int = 0
    calls: int = 0
    cached_input_tokens: int = 0
    cache_write_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(self.input_tokens + other.input_tokens, self.output_tokens + other.output_tokens,
                     self.calls + other.calls, self.cached_input_tokens + other.cached_input_tokens,
                     self.cache_write_tokens + other.cache_write_tokens)


def _factor(model: str) -> float:
    name = model.lower().split("/")[-1]
    best = max((k for k in CACHED_INPUT_FACTOR if name.startswith(k)), key=len, default=None)
    return CACHED_INPUT_FACTOR[best] if best else 1.0


def cost_usd(model: str | None, usage: Usage) -> tuple[float, float] | None:
    """(cost, saving from prompt caching) in USD, or None for a model without a price."""
    p = price_of(model)
    if p is None or model is None:
        return None
    f = _factor(model)
    plain = usage.input_tokens - usage.cached_input_tokens - usage.cache_write_tokens
    cost = (plain * p[0] + usage.cached_input_tokens * p[0] * f + usage.cache_write_tokens * p[0] * CACHE_WRITE_FACTOR
            + usage.output_tokens * p[1]) / 1e6
    uncached = (usage.input_tokens * p[0] + usage.output_tokens * p[1]) / 1e6
    return cost, uncached - cost


def cost_line(model: str | None, usage: Usage) -> str:
    """One line: tokens and cost in USD, or "cost unknown" for a model without a price."""
    c = cost_usd(model, usage)
    cost = "cost unknown" if c is None else f"${c[0]:.4f}"
    cache = ""
    if usage.cached_input_tokens or usage.cache_write_tokens:
        cache = f" ({usage.cached_input_tokens} read from the prompt cache" + (
            f", {usage.cache_write_tokens} written to it" if usage.cache_write_tokens else "") + (
            f"; caching saved ${c[1]:.4f}" if c is not None else "") + ")"
    return (f"{usage.calls} calls, {usage.input_tokens} input{cache} + {usage.output_tokens} output tokens, "
            f"{cost} ({model or 'unknown model'})")
