"""LLMProvider: one interface over the official ``openai`` client, for any OpenAI-compatible endpoint."""

from __future__ import annotations

import importlib
import json
import logging
import random
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, Protocol, TypeVar

import openai
from pydantic import BaseModel

from . import structured as so
from .errors import (
    LLMCancelled,
    LLMError,
    LLMNotConfigured,
    LLMRequestRejected,
    LLMUnavailable,
    StructuredOutputError,
)
from .failures import Failure, classify, final_error
from .records import CallTally, LLMCallRecord, LLMResult, log_call
from .settings import LLMSettings
from .sse import SSEDecoder, StreamErrorEvent
from .streaming import CallbackFailed, CancelWatcher, OverallTimeout, drain, keeps_connection, merge_tool_call
from .transport import llm_http_client

logger = logging.getLogger("mojodex.llm")

T = TypeVar("T", bound=BaseModel)
Recorder = Callable[[LLMCallRecord], None]
Messages = Sequence[dict[str, Any]]

MAX_BACKOFF_S = 10.0


def _client_http_module() -> Any:
    """The HTTP library the openai client is built on (httpx2 for openai 3.x, httpx before)."""
    for name in ("httpx2", "httpx"):
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        if getattr(module, "Timeout", None) is openai.Timeout:
            return module
    raise ImportError("cannot tell which HTTP library the openai client is built on")


# Requests go through the client's ``post`` (auth, headers, status errors, connection errors)
# and come back as the raw HTTP response: no typed transform of the request (it grows with the
# conversation), no pydantic model per streamed chunk. The body is decoded here, into dicts.
_http = _client_http_module()
HTTP_RESPONSE: type = _http.Response
TIMEOUT_ERRORS: tuple[type[BaseException], ...] = (_http.TimeoutException,)
TRANSPORT_ERRORS: tuple[type[BaseException], ...] = (_http.RequestError,)
CHAT_COMPLETIONS = "/chat/completions"


def request_body(request: dict[str, Any], *, stream: bool) -> dict[str, Any]:
    """The JSON body of a chat completion: ``extra_body`` keys merged last, as the client does."""
    body = dict(request)
    extra = body.pop("extra_body", None)
    if stream:
        body["stream"] = True
        body["stream_options"] = {"include_usage": True}
    if extra:
        body.update(extra)
    return body


class ServerGuard(Protocol):
    """A model server the platform runs itself (the embedded local model).

    ``recover()`` is asked once per call when the endpoint cannot be reached: it restarts the
    server if it died (and may be restarted) and returns None when the call can be retried
    now, else a sentence naming the cause, which becomes the user's error.
    """

    def recover(self) -> str | None: ...


class _Attempt:
    """Per-attempt state: whether text already reached the caller (no retry after that)."""

    def __init__(self) -> None:
        self.delivered = False
        self.first_token_at: float | None = None


class LLMProvider:
    """Thread-safe; share one instance per endpoint (it remembers backend capabilities)."""

    def __init__(
        self, settings: LLMSettings, recorder: Recorder | None = None, guard: ServerGuard | None = None
    ) -> None:
        self.settings = settings
        self.recorder = recorder
        self.guard = guard
        self._client: openai.OpenAI | None = None
        self._client_lock = threading.Lock()
        self._json_schema_unsupported = False

    # ------------------------------------------------------------------ public API

    @property
    def structured_mode_in_use(self) -> str:
        mode = self.settings.structured_mode
        if mode == "auto":
            return "json_object" if self._json_schema_unsupported else "json_schema"
        return mode

    def chat(
        self,
        messages: Messages,
        *,
        label: str,
        stream: bool = False,
        on_token: Callable[[str], None] | None = None,
        temperature: float = 0.0,
        max_tokens: int | None = None,
        grammar: str | None = None,
        user_task_execution_pk: int | None = None,
        cancel: threading.Event | None = None,
        tools: list[dict[str, Any]] | None = None,
        read_timeout_s: float | None = None,
    ) -> LLMResult:
        """``read_timeout_s``: each read's bound when nothing is shown (a stream only there to be cancelled),
        as ``structured`` does; by default the first token's."""
        started = time.monotonic()
        tally = CallTally(model=self.settings.model)
        extra: dict[str, Any] = {}
        if grammar:
            extra["extra_body"] = {"grammar": grammar}
        if tools:
            extra["tools"] = tools
        try:
            result = self._complete(
                list(messages),
                tally,
                started,
                stream=stream,
                on_token=on_token,
                temperature=temperature,
                max_tokens=max_tokens,
                cancel=cancel,
                options=extra,
                read_timeout_s=read_timeout_s,
            )
        except BaseException as exc:
            self._record(label, tally, started, user_task_execution_pk, exc)
            raise
        self._record(label, tally, started, user_task_execution_pk, None)
        return result

    def structured(
        self,
        messages: Messages,
        response_model: type[T],
        *,
        label: str,
        user_task_execution_pk: int | None = None,
        temperature: float = 0.0,
        max_tokens: int | None = None,
        cancel: threading.Event | None = None,
    ) -> T:
        """Ask for JSON matching ``response_model``; one corrective retry on invalid output.

        With a ``cancel`` the answer is streamed (and collected): a non-streamed answer comes in one
        piece once it is all generated, so nothing could interrupt the call before; streamed, a
        cancel closes the response as soon as its headers came, which a streaming server sends
        before it generates (``CancelWatcher``). Each read is still bounded by ``timeout_s``."""
        started = time.monotonic()
        tally = CallTally(model=self.settings.model)
        try:
            value = self._structured(
                list(messages), response_model, tally, started, temperature, max_tokens, cancel
            )
        except BaseException as exc:
            self._record(label, tally, started, user_task_execution_pk, exc)
            raise
        self._record(label, tally, started, user_task_execution_pk, None)
        return value

    def close(self) -> None:
        with self._client_lock:
            client, self._client = self._client, None
        if client is not None:
            client.close()

    # ------------------------------------------------------------------ structured

    def _structured(
        self,
        messages: list[dict[str, Any]],
        response_model: type[T],
        tally: CallTally,
        started: float,
        temperature: float,
        max_tokens: int | None,
        cancel: threading.Event | None,
    ) -> T:
        invalid = 0
        while True:
            mode = self.structured_mode_in_use
            options, instruction = so.request_options(mode, response_model)
            try:
                result = self._complete(
                    so.with_system_message(messages, instruction),
                    tally,
                    started,
                    stream=cancel is not None,
                    on_token=None,
                    temperature=temperature,
                    max_tokens=max_tokens,
                    cancel=cancel,
                    options=options,
                    # Streamed or not, the model may think for as long as the call may last.
                    read_timeout_s=self.settings.timeout_s,
                )
            except (LLMRequestRejected, LLMUnavailable) as exc:
                # Some servers refuse json_schema with a 400/422, others (llama-cpp-python's) with a
                # 500 whose body names the field: either way, JSON mode is the way from now on.
                if (
                    self.settings.structured_mode == "auto"
                    and mode == "json_schema"
                    and exc.status_code in (400, 422, 500)
                    and so.mentions_unsupported_format(exc.detail)
                ):
                    self._json_schema_unsupported = True
                    logger.warning(
                        "LLM endpoint %s rejected response_format json_schema; using json_object from now on",
                        self.settings.base_url or "api.openai.com",
                    )
                    continue
                raise
            try:
                return so.parse(result.text, response_model)
            except so.InvalidStructuredOutput as err:
                invalid += 1
                if invalid >= 2:
                    raise StructuredOutputError(
                        f"The assistant returned an answer in an unexpected format ({err}).",
                        attempts=tally.attempts,
                        detail=str(err),
                        raw=result.text,
                    ) from None
                logger.info("structured output invalid (%s); asking the model once more", err)
                messages = [*messages, {"role": "assistant", "content": result.text}, so.retry_message(err)]

    # ------------------------------------------------------------------ retries

    def _complete(
        self,
        messages: list[dict[str, Any]],
        tally: CallTally,
        started: float,
        *,
        stream: bool,
        on_token: Callable[[str], None] | None,
        temperature: float,
        max_tokens: int | None,
        cancel: threading.Event | None,
        options: dict[str, Any],
        read_timeout_s: float | None = None,
    ) -> LLMResult:
        settings = self.settings
        if not settings.configured:
            raise LLMNotConfigured()
        client = self._get_client()
        max_attempts = settings.max_retries + 1
        tries = 0  # attempts within this _complete (tally.attempts spans the whole public call)
        guarded = False  # the guard is asked once per call
        while True:
            if cancel is not None and cancel.is_set():
                raise LLMCancelled(attempts=tally.attempts)
            tries += 1
            tally.attempts += 1
            attempt = _Attempt()
            request = dict(options)
            request.update(model=tally.model, messages=messages, temperature=temperature)
            if max_tokens is not None:
                request["max_tokens"] = max_tokens
            try:
                if stream:
                    return self._stream_once(client, request, tally, started, attempt, on_token, cancel,
                                             read_timeout_s)
                return self._once(client, request, tally, started)
            except LLMError:
                raise
            except CallbackFailed as wrapped:
                raise wrapped.original from None  # the caller's on_token bug, not an LLM failure
            except Exception as exc:
                failure = classify(exc)
                if failure is None:
                    raise
            if cancel is not None and cancel.is_set():
                raise LLMCancelled(attempts=tally.attempts)
            if failure.kind == "connection" and self.guard is not None and not guarded and not attempt.delivered:
                # A server of our own refused the connection: backing off will not bring it back.
                guarded = True
                cause = self.guard.recover()
                if cause is not None:
                    raise LLMUnavailable(
                        f"The assistant is unavailable: {cause}.", attempts=tally.attempts, detail=failure.detail
                    )
                logger.warning("LLM server recovered after a connection failure; retrying the call once")
                continue
            if not failure.retryable or attempt.delivered or tries >= max_attempts:
                limit = min(settings.first_token_timeout_s, settings.timeout_s) if stream else settings.timeout_s
                raise final_error(failure, tally.attempts, attempt.delivered, limit)
            logger.debug("LLM attempt %d/%d failed (%s); retrying", tries, max_attempts, failure.short())
            if (
                failure.kind == "rate_limit"
                and settings.fallback_model
                and tally.model != settings.fallback_model
            ):
                logger.warning(
                    "LLM rate limited on %s; falling back to %s", tally.model, settings.fallback_model
                )
                tally.model = settings.fallback_model
                continue  # a different model: no need to wait
            self._backoff(tries, failure, cancel, tally)

    def _backoff(
        self, tries: int, failure: Failure, cancel: threading.Event | None, tally: CallTally
    ) -> None:
        delay = self.settings.backoff_base_s * (2 ** (tries - 1)) * (1 + random.random() * 0.25)
        if failure.retry_after_s is not None:
            delay = max(delay, min(failure.retry_after_s, self.settings.timeout_s))
        delay = min(delay, MAX_BACKOFF_S)
        if cancel is not None:
            if cancel.wait(delay):
                raise LLMCancelled(attempts=tally.attempts)
        elif delay > 0:
            time.sleep(delay)

    # ------------------------------------------------------------------ one attempt

    def _get_client(self) -> openai.OpenAI:
        with self._client_lock:
            if self._client is None:
                self._client = openai.OpenAI(
                    base_url=self.settings.base_url,
                    # Local servers need no key, but the client insists on one.
                    api_key=self.settings.api_key or "no-key",
                    max_retries=0,  # retries are ours (we must not retry after the first token)
                    timeout=self.settings.timeout_s,
                    http_client=llm_http_client(),  # None: the openai client's default
                )
            return self._client

    def _once(
        self, client: openai.OpenAI, request: dict[str, Any], tally: CallTally, started: float
    ) -> LLMResult:
        response = client.post(
            CHAT_COMPLETIONS,
            cast_to=HTTP_RESPONSE,
            body=request_body(request, stream=False),
            options={"timeout": self.settings.timeout_s},
            stream=False,
        )
        payload = json.loads(response.content)
        choices = payload.get("choices") if type(payload) is dict else None
        if not choices or not isinstance(choices, list) or type(choices[0]) is not dict:
            raise ValueError(f"chat completion without choices: {response.text[:200]!r}")
        choice = choices[0]
        message = choice.get("message")
        if type(message) is not dict:
            message = {}
        text = message.get("content") or ""
        if type(text) is not str:
            raise ValueError(f"message content is not text: {str(text)[:200]!r}")
        tool_calls = [call for call in message.get("tool_calls") or () if type(call) is dict]
        tally.add_usage(payload.get("usage"), request["messages"], text)
        latency = (time.monotonic() - started) * 1000
        return LLMResult(
            text=text,
            model=tally.model,
            prompt_tokens=tally.prompt_tokens,
            completion_tokens=tally.completion_tokens,
            latency_ms=latency,
            first_token_ms=latency,
            usage_estimated=tally.usage_estimated,
            attempts=tally.attempts,
            finish_reason=choice.get("finish_reason"),
            tool_calls=tool_calls,
        )

    def _stream_once(
        self,
        client: openai.OpenAI,
        request: dict[str, Any],
        tally: CallTally,
        started: float,
        attempt: _Attempt,
        on_token: Callable[[str], None] | None,
        cancel: threading.Event | None,
        read_timeout_s: float | None = None,
    ) -> LLMResult:
        settings = self.settings
        # connect/write/pool bounded by timeout_s; every read (headers, each chunk) by first_token_timeout_s,
        # or by ``read_timeout_s`` (a structured call, streamed only to be cancellable: as when not streamed).
        # No read waits longer than the whole attempt may last; an attempt past timeout_s ends at its
        # next read (or that read's timeout): at most about twice timeout_s for a stream that stalls.
        # (A read that completes a call showing no token still completes it.)
        timeout = openai.Timeout(settings.timeout_s,
                                 read=min(read_timeout_s or settings.first_token_timeout_s, settings.timeout_s))
        attempt_started = time.monotonic()
        deadline = attempt_started + settings.timeout_s
        response = client.post(
            CHAT_COMPLETIONS,
            cast_to=HTTP_RESPONSE,
            body=request_body(request, stream=True),
            options={"timeout": timeout},
            stream=True,
        )
        watcher = CancelWatcher(cancel, response) if cancel is not None else None
        decoder = SSEDecoder()
        parts: list[str] = []
        tool_calls: dict[int, dict[str, Any]] = {}
        usage = None
        finish_reason = None
        monotonic = time.monotonic
        try:
            body = response.iter_bytes()
            try:
                for raw in body:
                    if on_token is not None and not attempt.delivered and monotonic() > deadline:
                        # Past the attempt's deadline with nothing shown yet: end it before this
                        # read's content reaches the user, so that the call is retried cleanly. (A
                        # call that shows nothing keeps a read that completes it just past the deadline.)
                        raise OverallTimeout(f"nothing shown after {settings.timeout_s:g}s")
                    for chunk in decoder.feed(raw):
                        if cancel is not None and cancel.is_set():
                            raise LLMCancelled(attempts=tally.attempts)
                        if type(chunk) is not dict:
                            raise ValueError(f"stream event is not an object: {str(chunk)[:200]!r}")
                        if chunk.get("usage"):
                            usage = chunk["usage"]
                        for choice in chunk.get("choices") or ():
                            if choice.get("index") not in (0, None):
                                continue
                            finish_reason = choice.get("finish_reason") or finish_reason
                            delta = choice.get("delta")
                            if not delta:
                                continue
                            calls = delta.get("tool_calls")
                            if calls:
                                for call in calls:
                                    merge_tool_call(tool_calls, call)
                            content = delta.get("content")
                            if content:
                                if type(content) is not str:  # before any callback sees it
                                    raise ValueError(f"chunk content is not text: {str(content)[:200]!r}")
                                if attempt.first_token_at is None:
                                    attempt.first_token_at = monotonic()
                                parts.append(content)
                                if on_token is not None:
                                    attempt.delivered = True
                                    try:
                                        on_token(content)
                                    except Exception as exc:
                                        raise CallbackFailed(exc) from exc
                    if decoder.done:
                        break
                    # After every read, not every event: a stream of keep-alive comments (no event)
                    # must not outlive the attempt.
                    if monotonic() > deadline:
                        raise OverallTimeout(f"stream still running after {settings.timeout_s:g}s")
            except TIMEOUT_ERRORS as err:
                raise openai.APITimeoutError(request=response.request) from err
            except TRANSPORT_ERRORS as err:
                raise openai.APIConnectionError(request=response.request) from err
            except StreamErrorEvent as err:
                raise openai.APIError(err.message, response.request, body=err.body) from None
            except (AttributeError, TypeError) as err:  # a chunk of an unexpected shape
                raise ValueError(f"unexpected chat completion chunk ({err})") from err
            if decoder.done and keeps_connection(response):
                drain(body)  # the body's end (the last chunk) must be read for the connection to be reused
        except CallbackFailed:
            raise
        except Exception:
            if cancel is not None and cancel.is_set():
                raise LLMCancelled(attempts=tally.attempts) from None
            raise
        finally:
            if watcher is not None:
                watcher.stop()
            response.close()
        if cancel is not None and cancel.is_set():
            raise LLMCancelled(attempts=tally.attempts)
        if finish_reason is None:
            logger.warning("LLM stream ended without finish_reason (model=%s)", tally.model)
        text = "".join(parts)
        tally.add_usage(usage, request["messages"], text)
        now = time.monotonic()
        first = attempt.first_token_at or now
        return LLMResult(
            text=text,
            model=tally.model,
            prompt_tokens=tally.prompt_tokens,
            completion_tokens=tally.completion_tokens,
            latency_ms=(now - started) * 1000,
            first_token_ms=(first - started) * 1000,
            usage_estimated=tally.usage_estimated,
            attempts=tally.attempts,
            finish_reason=finish_reason,
            tool_calls=list(tool_calls.values()),
        )

    # ------------------------------------------------------------------ records

    def _record(
        self,
        label: str,
        tally: CallTally,
        started: float,
        user_task_execution_pk: int | None,
        exc: BaseException | None,
    ) -> None:
        record = tally.to_record(label, (time.monotonic() - started) * 1000, user_task_execution_pk, exc)
        log_call(record, exc)
        if self.recorder is None:
            return
        try:
            self.recorder(record)
        except Exception:
            logger.exception("LLM call recorder failed (label=%s); the call itself is unaffected", label)
