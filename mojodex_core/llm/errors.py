"""One exception hierarchy for every LLM failure; messages are fit for end users."""

from __future__ import annotations


class LLMError(Exception):
    """Base class. ``str(exc)`` is a sentence an end user can read."""

    default_message = "The assistant failed to answer."

    def __init__(
        self,
        message: str | None = None,
        *,
        status_code: int | None = None,
        attempts: int = 0,
        detail: str | None = None,
    ) -> None:
        self.message = message or self.default_message
        self.status_code = status_code
        self.attempts = attempts
        self.detail = detail  # technical detail for logs, never shown to users
        super().__init__(self.message)


class LLMNotConfigured(LLMError):
    default_message = (
        "No LLM configured: set MOJODEX_LLM_BASE_URL (an OpenAI-compatible server) or MOJODEX_LLM_API_KEY."
    )


class LLMRateLimited(LLMError):
    default_message = "The assistant is busy right now (rate limited). Please try again in a moment."


class LLMTimeout(LLMError):
    default_message = "The assistant did not answer in time."


class LLMUnavailable(LLMError):
    default_message = "The assistant is unavailable."


class LLMRequestRejected(LLMError):
    """The endpoint refused the request itself (HTTP 4xx other than 429): not retried."""

    default_message = "The assistant rejected the request."


class LLMCancelled(LLMError):
    default_message = "The request to the assistant was cancelled."


class StructuredOutputError(LLMError):
    default_message = "The assistant returned an answer in an unexpected format."

    def __init__(self, message: str | None = None, *, raw: str | None = None, **kwargs) -> None:
        super().__init__(message, **kwargs)
        self.raw = raw  # last raw model output, for logs


def attempts_text(attempts: int) -> str:
    return f"{attempts} attempt" + ("" if attempts == 1 else "s")
