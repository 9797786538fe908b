"""Plain data returned by the provider: call results and per-call records."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, Literal

from .errors import LLMError
from .pricing import cost_usd

logger = logging.getLogger("mojodex.llm")


def estimate_tokens(text: str) -> int:
    """~4 characters per token: used only when the server reports no usage."""
    return (len(text) + 3) // 4


@dataclass(frozen=True)
class LLMResult:
    """One completed chat call.

    ``latency_ms`` and ``first_token_ms`` are measured from the start of the call
    (retries included), i.e. what the user waited. Non-streamed, ``first_token_ms``
    equals ``latency_ms``. ``usage_estimated`` is True when the server reported no
    usage and the token counts are ~len/4 estimates.
    """

    text: str
    model: str
    prompt_tokens: int
    completion_tokens: int
    latency_ms: float
    first_token_ms: float | None
    usage_estimated: bool = False
    attempts: int = 1
    finish_reason: str | None = None
    tool_calls: list[dict[str, Any]] = field(default_factory=list)

    @property
    def truncated(self) -> bool:
        """The reply was cut off by the token limit (``max_tokens``): the model did not finish it."""
        return self.finish_reason == "length"


@dataclass(frozen=True)
class LLMCallRecord:
    """One record per ``chat``/``structured`` call (all its attempts), success or failure.

    Maps onto the ``llm_call`` table (``user_task_execution_pk`` -> ``user_task_execution_fk``).
    """

    label: str
    model: str
    prompt_tokens: int
    completion_tokens: int
    latency_ms: float
    cost: float
    user_task_execution_pk: int | None
    attempts: int
    status: Literal["ok", "error"]
    error: str | None = None
    usage_estimated: bool = False


@dataclass
class CallTally:
    """Mutable accumulator for one public call, shared by its attempts (internal)."""

    model: str
    attempts: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    usage_estimated: bool = False

    def add_usage(self, usage: dict[str, Any] | None, messages: list[dict[str, Any]], text: str) -> None:
        """Add the server-reported usage (the ``usage`` object, decoded), or ~len/4 estimates when there is none."""
        if isinstance(usage, dict) and usage.get("prompt_tokens") is not None:
            self.prompt_tokens += int(usage["prompt_tokens"] or 0)
            self.completion_tokens += int(usage.get("completion_tokens") or 0)
            return
        prompt = "\n".join(str(m.get("content") or "") for m in messages)
        self.prompt_tokens += estimate_tokens(prompt)
        self.completion_tokens += estimate_tokens(text)
        self.usage_estimated = True

    def to_record(
        self, label: str, latency_ms: float, user_task_execution_pk: int | None, exc: BaseException | None
    ) -> LLMCallRecord:
        error = None if exc is None else (str(exc) or type(exc).__name__)
        if isinstance(exc, LLMError) and exc.detail:
            error = f"{exc.message} [{exc.detail}]"
        return LLMCallRecord(
            label=label,
            model=self.model,
            prompt_tokens=self.prompt_tokens,
            completion_tokens=self.completion_tokens,
            latency_ms=latency_ms,
            cost=cost_usd(self.model, self.prompt_tokens, self.completion_tokens),
            user_task_execution_pk=user_task_execution_pk,
            attempts=self.attempts,
            status="ok" if exc is None else "error",
            error=error,
            usage_estimated=self.usage_estimated,
        )


def log_call(record: LLMCallRecord, exc: BaseException | None) -> None:
    """The one log line per call."""
    log = logger.info if exc is None else logger.warning
    log(
        "llm call label=%s model=%s status=%s tokens=%d+%d%s latency_ms=%.0f attempts=%d%s",
        record.label,
        record.model,
        record.status,
        record.prompt_tokens,
        record.completion_tokens,
        " (estimated)" if record.usage_estimated else "",
        record.latency_ms,
        record.attempts,
        f" error={type(exc).__name__}: {exc}" if exc is not None else "",
    )
