"""Classify exceptions raised by the ``openai`` client (and its HTTP layer) into retry decisions."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import openai

from .errors import (
    LLMError,
    LLMRateLimited,
    LLMRequestRejected,
    LLMTimeout,
    LLMUnavailable,
    attempts_text,
)

FailureKind = Literal["rate_limit", "server", "connection", "timeout", "rejected", "malformed"]

_RETRYABLE: frozenset[str] = frozenset({"rate_limit", "server", "connection", "timeout"})


@dataclass(frozen=True)
class Failure:
    kind: FailureKind
    status: int | None = None
    detail: str | None = None
    retry_after_s: float | None = None

    @property
    def retryable(self) -> bool:
        return self.kind in _RETRYABLE

    def short(self) -> str:
        status = f" HTTP {self.status}" if self.status else ""
        return f"{self.kind}{status}: {(self.detail or '')[:200]}"


def _retry_after(exc: openai.APIStatusError) -> float | None:
    response = getattr(exc, "response", None)
    raw = response.headers.get("retry-after") if response is not None else None
    if not raw:
        return None
    try:
        return max(0.0, float(raw))
    except ValueError:
        return None  # HTTP-date form: ignore, use our backoff


def _status_detail(exc: openai.APIStatusError) -> str:
    body = exc.body
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict) and error.get("message"):
            return str(error["message"])
        if isinstance(error, str):
            return error
    return exc.message or str(exc)


def classify(exc: BaseException) -> Failure | None:
    """Return the failure kind, or None for an exception that is not an LLM transport failure."""
    if isinstance(exc, openai.APITimeoutError):
        return Failure("timeout", detail=str(exc))
    if isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        detail = _status_detail(exc)
        if status == 429:
            return Failure("rate_limit", status, detail, _retry_after(exc))
        if status >= 500:
            return Failure("server", status, detail, _retry_after(exc))
        if status == 408:
            return Failure("timeout", status, detail)
        return Failure("rejected", status, detail)
    if isinstance(exc, openai.APIConnectionError):
        return Failure("connection", detail=str(exc.__cause__ or exc))
    if isinstance(exc, openai.APIResponseValidationError):
        return Failure("malformed", detail=str(exc))
    if isinstance(exc, openai.APIError):
        # An error event inside a stream (e.g. the server failed while generating).
        return Failure("server", detail=str(exc))
    if isinstance(exc, TimeoutError):
        return Failure("timeout", detail=str(exc) or "timed out")
    module = type(exc).__module__ or ""
    if module.startswith(("httpx", "httpcore", "h11", "anyio")) or isinstance(exc, ConnectionError):
        # Older clients let transport errors escape while iterating a stream.
        kind: FailureKind = "timeout" if "Timeout" in type(exc).__name__ else "connection"
        return Failure(kind, detail=f"{type(exc).__name__}: {exc}")
    if isinstance(exc, ValueError):  # undecodable JSON body / SSE event, empty choices
        return Failure("malformed", detail=f"{type(exc).__name__}: {exc}")
    return None


def final_error(failure: Failure, attempts: int, delivered: bool, wait_limit_s: float) -> LLMError:
    """The exception to raise once no retry is left, with a message fit for end users."""
    after = attempts_text(attempts)
    kwargs = {"status_code": failure.status, "attempts": attempts, "detail": failure.detail}
    if failure.kind == "rate_limit":
        return LLMRateLimited(
            f"The assistant is busy right now (rate limited, HTTP 429 after {after}). "
            "Please try again in a moment.",
            **kwargs,
        )
    if delivered:
        what = "timed out" if failure.kind == "timeout" else "was interrupted"
        cls = LLMTimeout if failure.kind == "timeout" else LLMUnavailable
        return cls(f"The assistant's answer {what} before it was complete.", **kwargs)
    if failure.kind == "timeout":
        return LLMTimeout(
            f"The assistant did not answer in time (nothing within {wait_limit_s:g}s, after {after}).",
            **kwargs,
        )
    if failure.kind == "server":
        status = f"HTTP {failure.status}" if failure.status else "server error"
        return LLMUnavailable(f"The assistant is unavailable ({status} after {after}).", **kwargs)
    if failure.kind == "connection":
        return LLMUnavailable(f"The assistant is unavailable (connection failed after {after}).", **kwargs)
    if failure.kind == "malformed":
        return LLMUnavailable("The assistant is unavailable (it sent an invalid response).", **kwargs)
    reason = (failure.detail or "").strip().splitlines()[0][:200] if failure.detail else ""
    return LLMRequestRejected(
        f"The assistant rejected the request (HTTP {failure.status}{': ' + reason if reason else ''}).",
        **kwargs,
    )
