"""LLM connection settings (one OpenAI-compatible endpoint)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

StructuredMode = Literal["auto", "json_schema", "json_object", "grammar"]
STRUCTURED_MODES: tuple[str, ...] = ("auto", "json_schema", "json_object", "grammar")


@dataclass(frozen=True, kw_only=True)
class LLMSettings:
    """Where and how to call the model.

    ``base_url`` is any OpenAI-compatible endpoint (``http://127.0.0.1:8080/v1`` for a
    llama.cpp server); ``None`` means the official OpenAI API. ``timeout_s`` bounds a
    whole attempt; ``first_token_timeout_s`` bounds the wait for the first streamed
    byte (and every later gap between stream chunks). ``max_retries`` retries follow
    the first attempt, with exponential backoff from ``backoff_base_s``.
    """

    base_url: str | None = None
    api_key: str | None = None
    model: str
    fallback_model: str | None = None
    timeout_s: float = 60
    first_token_timeout_s: float = 30
    max_retries: int = 3
    backoff_base_s: float = 0.5
    structured_mode: StructuredMode = "auto"

    def __post_init__(self) -> None:
        if not self.model:
            raise ValueError("LLMSettings.model must not be empty")
        if self.timeout_s <= 0 or self.first_token_timeout_s <= 0:
            raise ValueError("LLMSettings timeouts must be positive")
        if self.max_retries < 0:
            raise ValueError("LLMSettings.max_retries must be >= 0")
        if self.backoff_base_s < 0:
            raise ValueError("LLMSettings.backoff_base_s must be >= 0")
        if self.structured_mode not in STRUCTURED_MODES:
            raise ValueError(f"LLMSettings.structured_mode must be one of {STRUCTURED_MODES}")

    @property
    def configured(self) -> bool:
        return bool(self.base_url or self.api_key)

    @classmethod
    def from_config(cls, config: Any, **overrides: Any) -> LLMSettings:
        """Build from ``mojodex_core.config.LLMConfig`` (or any object with the same attributes)."""
        values: dict[str, Any] = {}
        for name in cls.__dataclass_fields__:
            if hasattr(config, name):
                values[name] = getattr(config, name)
        values.update(overrides)
        return cls(**values)
