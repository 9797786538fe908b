"""LLM access: one provider over the official ``openai`` client for any OpenAI-compatible endpoint.

Usage (``save`` stores an LLMCallRecord, ``emit`` forwards a token)::

    provider = LLMProvider(LLMSettings(base_url="http://127.0.0.1:8080/v1", model="local"), recorder=save)
    result = provider.chat(messages, label="greeting", stream=True, on_token=emit)
    order = provider.structured(messages, Order, label="order_capture")
"""

from .errors import (
    LLMCancelled,
    LLMError,
    LLMNotConfigured,
    LLMRateLimited,
    LLMRequestRejected,
    LLMTimeout,
    LLMUnavailable,
    StructuredOutputError,
)
from .pricing import PRICES_PER_MILLION, cost_usd
from .provider import LLMProvider, ServerGuard
from .records import LLMCallRecord, LLMResult
from .settings import LLMSettings, StructuredMode

__all__ = [
    "PRICES_PER_MILLION",
    "LLMCallRecord",
    "LLMCancelled",
    "LLMError",
    "LLMNotConfigured",
    "LLMProvider",
    "LLMRateLimited",
    "LLMRequestRejected",
    "LLMResult",
    "LLMSettings",
    "LLMTimeout",
    "LLMUnavailable",
    "ServerGuard",
    "StructuredMode",
    "StructuredOutputError",
    "cost_usd",
]
