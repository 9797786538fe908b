"""A small price table: USD per million tokens, by model name.

Unknown models (local llama.cpp models, self-hosted endpoints) cost 0.0. A dated or
suffixed name ("gpt-4o-mini-2024-07-18") uses the longest known prefix.
"""

from __future__ import annotations

# model -> (input USD / 1M tokens, output USD / 1M tokens)
PRICES_PER_MILLION: dict[str, tuple[float, float]] = {
    "gpt-4o": (2.50, 10.00),
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-4.1": (2.00, 8.00),
    "gpt-4.1-mini": (0.40, 1.60),
    "gpt-4.1-nano": (0.10, 0.40),
    "gpt-4-turbo": (10.00, 30.00),
    "gpt-4": (30.00, 60.00),
    "gpt-3.5-turbo": (0.50, 1.50),
    "o1": (15.00, 60.00),
    "o1-mini": (1.10, 4.40),
    "o3-mini": (1.10, 4.40),
    "o4-mini": (1.10, 4.40),
}


def _price(model: str) -> tuple[float, float] | None:
    name = (model or "").lower()
    if "/" in name:  # "openai/gpt-4o-mini" style names from routers
        name = name.rsplit("/", 1)[1]
    if name in PRICES_PER_MILLION:
        return PRICES_PER_MILLION[name]
    best = ""
    for known in PRICES_PER_MILLION:
        if name.startswith(known + "-") and len(known) > len(best):
            best = known
    return PRICES_PER_MILLION[best] if best else None


def cost_usd(model: str, prompt_tokens: int, completion_tokens: int) -> float:
    price = _price(model)
    if price is None:
        return 0.0
    return (prompt_tokens * price[0] + completion_tokens * price[1]) / 1_000_000
