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


@dataclass(frozen=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0
    calls: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(self.input_tokens + other.input_tokens, self.output_tokens + other.output_tokens,
                     self.calls + other.calls)


def cost_line(model: str | None, usage: Usage) -> str:
    """One line: tokens and cost in USD, or "cost unknown" for a model without a price."""
    p = price_of(model)
    cost = "cost unknown" if p is None else \
        f"${(usage.input_tokens * p[0] + usage.output_tokens * p[1]) / 1e6:.4f}"
    return (f"{usage.calls} calls, {usage.input_tokens} input + {usage.output_tokens} output tokens, "
            f"{cost} ({model or 'unknown model'})")
