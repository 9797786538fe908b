"""LLMProvider against the scripted OpenAI-compatible server, over real HTTP with the real openai client."""

from __future__ import annotations

import dataclasses
import json
import threading
import time

import openai
import pytest
from pydantic import BaseModel

from mojodex_core.llm import (
    LLMCallRecord,
    LLMCancelled,
    LLMNotConfigured,
    LLMProvider,
    LLMRateLimited,
    LLMRequestRejected,
    LLMSettings,
    LLMTimeout,
    LLMUnavailable,
    StructuredOutputError,
    cost_usd,
)
from tests.support.scripted_llm import (
    DropMidStream,
    Events,
    Hang,
    HTTPError,
    Malformed,
    Reply,
    ScriptedLLMServer,
    ToolCall,
)

MESSAGES = [{"role": "system", "content": "You are helpful."}, {"role": "user", "content": "Hello?"}]


class Order(BaseModel):
    product: str
    quantity: int



def make(settings: LLMSettings, records: list[LLMCallRecord] | None = None, **changes) -> LLMProvider:
    return LLMProvider(
        dataclasses.replace(settings, **changes), recorder=None if records is None else records.append
    )


# ---------------------------------------------------------------------------- chat


def test_streamed_reply_calls_on_token_per_chunk(llm: ScriptedLLMServer, provider: LLMProvider, records):
    chunks = ["<ask_us", "er_primary_info>Q?", "</ask_user_primary_info>"]
    llm.script(Reply(chunks=chunks, delay_s=0.01, usage=(12, 7)))
    seen: list[str] = []

    result = provider.chat(MESSAGES, label="stream", stream=True, on_token=seen.append)

    assert seen == chunks
    assert result.text == "".join(chunks)
    assert (result.prompt_tokens, result.completion_tokens) == (12, 7)
    assert not result.usage_estimated
    assert result.first_token_ms is not None and result.first_token_ms <= result.latency_ms
    assert result.finish_reason == "stop"
    request = llm.last_request
    assert request["stream"] is True
    assert request["stream_options"] == {"include_usage": True}
    assert request["model"] == "gpt-4o-mini"
    assert request["messages"] == MESSAGES
    assert [r.status for r in records] == ["ok"]


def test_non_streamed_reply(llm: ScriptedLLMServer, provider: LLMProvider):
    llm.script(Reply("full text", usage=(3, 2)))
    result = provider.chat(MESSAGES, label="plain", max_tokens=50, temperature=0.3)
    assert result.text == "full text"
    assert (result.prompt_tokens, result.completion_tokens, result.attempts) == (3, 2, 1)
    assert result.first_token_ms == result.latency_ms
    assert not llm.last_request.get("stream")
    assert llm.last_request["max_tokens"] == 50
    assert llm.last_request["temperature"] == 0.3


def test_missing_usage_is_estimated(llm: ScriptedLLMServer, provider: LLMProvider, records):
    llm.script(Reply("x" * 40, include_usage=False))
    result = provider.chat(MESSAGES, label="est", stream=True)
    assert result.usage_estimated
    assert result.completion_tokens == 10
    assert result.prompt_tokens > 0
    assert records[0].usage_estimated


def test_grammar_and_tools_are_passed_through(llm: ScriptedLLMServer, provider: LLMProvider):
    tool = {"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}
    llm.script(ToolCall("lookup", '{"id": 3}'))
    result = provider.chat(MESSAGES, label="tools", stream=True, grammar='root ::= "yes"', tools=[tool])
    assert llm.last_request["grammar"] == 'root ::= "yes"'
    assert llm.last_request["tools"] == [tool]
    assert result.finish_reason == "tool_calls"
    assert result.tool_calls[0]["function"] == {"name": "lookup", "arguments": '{"id": 3}'}


# ---------------------------------------------------------------------------- retries


def test_429_then_success_is_retried(llm: ScriptedLLMServer, provider: LLMProvider, records):
    llm.script(HTTPError(429), Reply("ok", usage=(5, 1)))
    result = provider.chat(MESSAGES, label="retry", stream=True)
    assert result.text == "ok"
    assert result.attempts == 2
    assert len(llm.requests) == 2
    assert len(records) == 1
    assert (records[0].attempts, records[0].status, records[0].error) == (2, "ok", None)


def test_500_on_every_attempt_raises_unavailable(llm: ScriptedLLMServer, provider: LLMProvider, records):
    attempts = provider.settings.max_retries + 1
    llm.script(*[HTTPError(500)] * attempts, Reply("never reached"))
    with pytest.raises(LLMUnavailable) as info:
        provider.chat(MESSAGES, label="down")
    assert str(info.value) == f"The assistant is unavailable (HTTP 500 after {attempts} attempts)."
    assert info.value.status_code == 500
    assert len(llm.requests) == attempts
    assert llm.pending == 1
    assert records[0].status == "error" and records[0].attempts == attempts
    assert "HTTP 500" in records[0].error


def test_rate_limited_on_every_attempt(llm: ScriptedLLMServer, llm_settings: LLMSettings):
    provider = make(llm_settings, max_retries=1)
    llm.script(HTTPError(429), HTTPError(429))
    with pytest.raises(LLMRateLimited, match="rate limited"):
        provider.chat(MESSAGES, label="busy")


def test_fallback_model_after_429(llm: ScriptedLLMServer, llm_settings: LLMSettings, records):
    provider = make(llm_settings, records, fallback_model="gpt-4o")
    llm.script(HTTPError(429, message="Rate limit reached for gpt-4o-mini"), Reply("from fallback"))
    result = provider.chat(MESSAGES, label="fallback", stream=True)
    assert [r["model"] for r in llm.requests] == ["gpt-4o-mini", "gpt-4o"]
    assert result.model == "gpt-4o"
    assert records[0].model == "gpt-4o"


def test_client_error_is_not_retried(llm: ScriptedLLMServer, provider: LLMProvider):
    llm.script(HTTPError(400, message="messages: too long"), Reply("never"))
    with pytest.raises(LLMRequestRejected, match="HTTP 400: messages: too long"):
        provider.chat(MESSAGES, label="bad")
    assert len(llm.requests) == 1


def test_malformed_response_raises_unavailable(llm: ScriptedLLMServer, provider: LLMProvider):
    llm.script(Malformed(), Malformed())
    with pytest.raises(LLMUnavailable, match="invalid response"):
        provider.chat(MESSAGES, label="garbled")
    with pytest.raises(LLMUnavailable, match="invalid response"):
        provider.chat(MESSAGES, label="garbled", stream=True)


@pytest.mark.parametrize("after_headers", [False, True], ids=["no-headers", "headers-then-silence"])
def test_hang_before_first_token_is_retried_then_times_out(
    llm: ScriptedLLMServer, llm_settings: LLMSettings, after_headers: bool
):
    provider = make(llm_settings, first_token_timeout_s=0.3, max_retries=1)
    llm.script(Hang(seconds=5, after_headers=after_headers), Hang(seconds=5, after_headers=after_headers))
    started = time.monotonic()
    with pytest.raises(LLMTimeout) as info:
        provider.chat(MESSAGES, label="hang", stream=True, on_token=lambda _t: None)
    assert len(llm.requests) == 2
    assert info.value.attempts == 2
    assert "did not answer in time" in str(info.value)
    assert time.monotonic() - started < 3


def test_a_stalled_stream_ends_at_the_attempt_s_timeout_when_it_is_the_shorter(
    llm: ScriptedLLMServer, llm_settings: LLMSettings
):
    # was: every read waited first_token_timeout_s (30 s by default) whatever timeout_s said, so
    # MOJODEX_LLM_TIMEOUT_S below 30 s did not bound a stalled stream
    provider = make(llm_settings, timeout_s=0.5, first_token_timeout_s=30, max_retries=1)
    llm.script(Hang(seconds=5, after_headers=True), Hang(seconds=5, after_headers=True))
    started = time.monotonic()
    with pytest.raises(LLMTimeout) as info:
        provider.chat(MESSAGES, label="stalled", stream=True, on_token=lambda _t: None)
    assert time.monotonic() - started < 3 and info.value.attempts == 2
    assert "nothing within 0.5s" in str(info.value)


def test_keep_alive_comments_do_not_outlive_the_attempt_which_is_retried(
    llm: ScriptedLLMServer, llm_settings: LLMSettings
):
    # was: the attempt's deadline was checked only when an event arrived: comments every 0.2 s kept
    # it going past timeout_s, and the late answer, streamed to the user, was then failed as timed out
    provider = make(llm_settings, timeout_s=1.0, first_token_timeout_s=30, max_retries=1)
    late = Events([": ping\n\n"] * 10 + ['data: {"choices": [{"index": 0, "delta": {"content": "late"}}]}\n\n',
                                         "data: [DONE]\n\n"], delay_s=0.2)
    llm.script(late, Reply("in time"))
    tokens: list[str] = []
    started = time.monotonic()
    result = provider.chat(MESSAGES, label="pings", stream=True, on_token=tokens.append)
    assert result.text == "in time" and "late" not in tokens  # the first attempt ended unseen, then retried
    assert len(llm.requests) == 2 and time.monotonic() - started < 2.5


def test_content_first_read_past_the_deadline_is_not_shown_and_the_call_is_retried(
    llm: ScriptedLLMServer, llm_settings: LLMSettings
):
    # was: the deadline was checked after a read's events had reached the user: content arriving
    # just past it was shown, then failed as timed out, with no retry
    provider = make(llm_settings, timeout_s=1.0, first_token_timeout_s=30, max_retries=1)
    late = Events([": ping\n\n", 'data: {"choices": [{"index": 0, "delta": {"content": "late"}}]}\n\n',
                   "data: [DONE]\n\n"], delay_s=0.7)
    llm.script(late, Reply("in time"))
    tokens: list[str] = []
    result = provider.chat(MESSAGES, label="late", stream=True, on_token=tokens.append)
    assert result.text == "in time" and "late" not in tokens and len(llm.requests) == 2


def test_hang_then_success(llm: ScriptedLLMServer, llm_settings: LLMSettings):
    provider = make(llm_settings, first_token_timeout_s=0.3)
    llm.script(Hang(seconds=5), Reply("late but fine"))
    assert provider.chat(MESSAGES, label="hang", stream=True).text == "late but fine"


def test_drop_mid_stream_after_tokens_is_final(llm: ScriptedLLMServer, provider: LLMProvider, records):
    llm.script(DropMidStream(after_chunks=2), Reply("must not be requested"))
    seen: list[str] = []
    with pytest.raises(LLMUnavailable, match="interrupted"):
        provider.chat(MESSAGES, label="drop", stream=True, on_token=seen.append)
    assert seen == ["Hello", " there"]
    assert len(llm.requests) == 1
    assert llm.pending == 1
    assert records[0].status == "error" and records[0].attempts == 1


def test_drop_before_anything_was_delivered_is_retried(llm: ScriptedLLMServer, provider: LLMProvider):
    # Without on_token nothing reached the caller, so the partial stream can be retried.
    llm.script(DropMidStream(after_chunks=2), Reply("second try"))
    assert provider.chat(MESSAGES, label="drop", stream=True).text == "second try"
    assert len(llm.requests) == 2


def test_on_token_exception_propagates_unchanged(llm: ScriptedLLMServer, provider: LLMProvider, records):
    llm.script(Reply("a b c"))

    def boom(_token: str) -> None:
        raise KeyError("caller bug")

    with pytest.raises(KeyError, match="caller bug"):
        provider.chat(MESSAGES, label="cb", stream=True, on_token=boom)
    assert len(llm.requests) == 1
    assert records[0].status == "error"


# ---------------------------------------------------------------------------- cancel


def test_cancel_event_stops_the_stream(llm: ScriptedLLMServer, provider: LLMProvider, records):
    llm.script(Reply(chunks=[f"t{i} " for i in range(50)], delay_s=0.05))
    cancel = threading.Event()
    seen: list[str] = []

    def on_token(token: str) -> None:
        seen.append(token)
        if len(seen) == 3:
            cancel.set()

    with pytest.raises(LLMCancelled):
        provider.chat(MESSAGES, label="cancel", stream=True, on_token=on_token, cancel=cancel)
    assert seen == ["t0 ", "t1 ", "t2 "]
    assert records[0].status == "error"


def test_a_cancel_set_before_the_call_sends_no_request(llm: ScriptedLLMServer, provider: LLMProvider):
    # A stop sent while every runner worker was busy reaches the turn before it starts: its call
    # must not reach the model.
    cancel = threading.Event()
    cancel.set()
    with pytest.raises(LLMCancelled):
        provider.chat(MESSAGES, label="cancel", stream=True, on_token=lambda _t: None, cancel=cancel)
    assert llm.requests == []


def test_cancel_interrupts_a_blocked_read(llm: ScriptedLLMServer, provider: LLMProvider):
    llm.script(Hang(seconds=10, after_headers=True))
    cancel = threading.Event()
    cancelled_at: list[float] = []

    def cancel_once_the_read_blocks() -> None:
        # Cancel only once the server holds the request: on a loaded machine a fixed delay could
        # fire before the request is even sent, and the test would prove nothing.
        deadline = time.monotonic() + 10
        while not llm.requests and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.1)
        cancelled_at.append(time.monotonic())
        cancel.set()

    threading.Thread(target=cancel_once_the_read_blocks, daemon=True).start()
    with pytest.raises(LLMCancelled):
        provider.chat(MESSAGES, label="cancel", stream=True, cancel=cancel)
    assert len(llm.requests) == 1
    assert time.monotonic() - cancelled_at[0] < 5.0  # the hang lasts 10 s: the read was interrupted


# ---------------------------------------------------------------------------- structured


def test_structured_valid_json(llm: ScriptedLLMServer, provider: LLMProvider, records):
    llm.script(Reply(json={"product": "tea", "quantity": 2}, usage=(40, 9)))
    order = provider.structured(MESSAGES, Order, label="order", user_task_execution_pk=7)
    assert order == Order(product="tea", quantity=2)
    fmt = llm.last_request["response_format"]
    assert fmt["type"] == "json_schema"
    assert fmt["json_schema"]["name"] == "Order"
    assert fmt["json_schema"]["strict"] is False
    assert fmt["json_schema"]["schema"] == Order.model_json_schema()
    assert (records[0].label, records[0].user_task_execution_pk, records[0].status) == ("order", 7, "ok")


def test_a_structured_call_with_a_cancel_is_streamed_and_a_cancel_ends_it(
    llm: ScriptedLLMServer, provider: LLMProvider, records
):
    # Not streamed, the answer arrives in one piece once generated: a cancel (the process quitting
    # during a title job) could not end the call before; the exit waited for it.
    llm.script(Reply(json={"product": "tea", "quantity": 2}))
    assert provider.structured(MESSAGES, Order, label="order", cancel=threading.Event()).quantity == 2
    assert llm.last_request["stream"] is True and llm.last_request["response_format"]["type"] == "json_schema"
    llm.script(Hang(seconds=10, after_headers=True))
    cancel = threading.Event()

    def cancel_once_held() -> None:
        deadline = time.monotonic() + 10
        while len(llm.requests) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.1)
        cancel.set()

    threading.Thread(target=cancel_once_held, daemon=True).start()
    started = time.monotonic()
    with pytest.raises(LLMCancelled):
        provider.structured(MESSAGES, Order, label="order", cancel=cancel)
    assert time.monotonic() - started < 5.0  # the hang lasts 10 s
    assert records[-1].status == "error"
    llm.script(Reply(json={"product": "tea", "quantity": 1}))
    provider.structured(MESSAGES, Order, label="order")
    assert "stream" not in llm.last_request  # without a cancel, as before


def test_a_cancellable_structured_call_waits_for_its_answer_as_long_as_one_not_streamed(
    llm: ScriptedLLMServer, llm_settings: LLMSettings
):
    # Streamed only to be cancellable, it keeps the call's bound on each read (timeout_s), not the
    # first token's: a long prompt on a slow model would time out where it did not before.
    provider = make(llm_settings, first_token_timeout_s=0.3, timeout_s=10, max_retries=0)
    llm.script(Reply(chunks=[json.dumps({"product": "tea", "quantity": 4})], delay_s=1.0))
    assert provider.structured(MESSAGES, Order, label="order", cancel=threading.Event()).quantity == 4


def test_structured_tolerates_code_fences(llm: ScriptedLLMServer, provider: LLMProvider):
    llm.script(Reply('```json\n{"product": "tea", "quantity": 1}\n```'))
    assert provider.structured(MESSAGES, Order, label="order").quantity == 1


def test_structured_invalid_json_then_success(llm: ScriptedLLMServer, provider: LLMProvider, records):
    llm.script(
        Reply("{not json", usage=(10, 3)), Reply(json={"product": "tea", "quantity": 3}, usage=(20, 5))
    )
    order = provider.structured(MESSAGES, Order, label="order")
    assert order.quantity == 3
    retry = llm.requests[1]["messages"]
    assert retry[-2] == {"role": "assistant", "content": "{not json"}
    assert retry[-1]["role"] == "user" and "not valid JSON" in retry[-1]["content"]
    assert len(records) == 1
    assert (records[0].attempts, records[0].prompt_tokens, records[0].completion_tokens) == (2, 30, 8)


def test_structured_schema_violation_twice(llm: ScriptedLLMServer, provider: LLMProvider, records):
    llm.script(Reply(json={"product": "tea"}), Reply(json={"product": "tea", "quantity": "many"}), Reply("x"))
    with pytest.raises(StructuredOutputError) as info:
        provider.structured(MESSAGES, Order, label="order")
    assert "quantity" in str(info.value)
    assert info.value.raw == '{"product": "tea", "quantity": "many"}'
    assert "quantity" in llm.requests[1]["messages"][-1]["content"]
    assert len(llm.requests) == 2
    assert records[0].status == "error" and records[0].attempts == 2


def test_structured_auto_downgrades_to_json_object(llm: ScriptedLLMServer, provider: LLMProvider):
    llm.script(
        HTTPError(400, message="response_format json_schema not supported"),
        Reply(json={"product": "tea", "quantity": 1}),
        Reply(json={"product": "milk", "quantity": 2}),
    )
    assert provider.structured(MESSAGES, Order, label="order").product == "tea"
    first, second = (r.get("response_format") for r in llm.requests)
    assert first["type"] == "json_schema"
    assert second == {"type": "json_object", "schema": Order.model_json_schema()}
    system = [m["content"] for m in llm.requests[1]["messages"] if m["role"] == "system"]
    assert any("JSON Schema" in content for content in system)
    # Remembered for this provider: the next call goes straight to json_object.
    assert provider.structured(MESSAGES, Order, label="order").product == "milk"
    assert llm.requests[2]["response_format"]["type"] == "json_object"
    assert provider.structured_mode_in_use == "json_object"


def test_structured_auto_downgrades_on_a_500_naming_json_schema(llm: ScriptedLLMServer, llm_settings):
    """llama-cpp-python's server answers json_schema with a 500 whose body names the field."""
    provider = make(llm_settings, max_retries=0)
    llm.script(
        HTTPError(500, message="response_format.type: Input should be 'text' or 'json_object', input: 'json_schema'"),
        Reply(json={"product": "tea", "quantity": 1}),
    )
    assert provider.structured(MESSAGES, Order, label="order").product == "tea"
    assert llm.requests[1]["response_format"]["type"] == "json_object"
    assert provider.structured_mode_in_use == "json_object"


def test_structured_explicit_json_schema_mode_does_not_downgrade(llm: ScriptedLLMServer, llm_settings):
    provider = make(llm_settings, structured_mode="json_schema")
    llm.script(HTTPError(400, message="response_format json_schema not supported"))
    with pytest.raises(LLMRequestRejected):
        provider.structured(MESSAGES, Order, label="order")


def test_structured_grammar_mode(llm: ScriptedLLMServer, llm_settings: LLMSettings):
    provider = make(llm_settings, structured_mode="grammar")
    llm.script(Reply(json={"product": "tea", "quantity": 4}))
    assert provider.structured(MESSAGES, Order, label="order").quantity == 4
    assert llm.last_request["response_format"] == {"type": "json_object", "schema": Order.model_json_schema()}


# ---------------------------------------------------------------------------- records, config


def test_recorder_receives_tokens_and_cost(llm: ScriptedLLMServer, provider: LLMProvider, records):
    llm.script(Reply("hi", usage=(1000, 500)))
    provider.chat(MESSAGES, label="priced", user_task_execution_pk=42)
    (record,) = records
    assert (record.label, record.model, record.user_task_execution_pk) == ("priced", "gpt-4o-mini", 42)
    assert (record.prompt_tokens, record.completion_tokens, record.attempts) == (1000, 500, 1)
    assert record.cost == pytest.approx(1000 * 0.15e-6 + 500 * 0.60e-6)
    assert record.latency_ms > 0
    assert cost_usd("my-local-gguf", 1000, 1000) == 0.0
    assert cost_usd("gpt-4o-mini-2024-07-18", 1_000_000, 0) == pytest.approx(0.15)


def test_recorder_failure_never_breaks_the_call(llm: ScriptedLLMServer, llm_settings, caplog):
    def broken(_record: LLMCallRecord) -> None:
        raise RuntimeError("db down")

    provider = LLMProvider(llm_settings, recorder=broken)
    llm.script(Reply("still fine"))
    assert provider.chat(MESSAGES, label="rec").text == "still fine"
    assert "recorder failed" in caplog.text


def test_not_configured():
    records: list[LLMCallRecord] = []
    provider = LLMProvider(LLMSettings(model="gpt-4o-mini"), recorder=records.append)
    with pytest.raises(LLMNotConfigured, match="No LLM configured"):
        provider.chat(MESSAGES, label="nothing")
    with pytest.raises(LLMNotConfigured):
        provider.structured(MESSAGES, Order, label="nothing")
    assert [r.status for r in records] == ["error", "error"]


def test_settings_from_config_object():
    class Config:
        base_url = "http://127.0.0.1:1/v1"
        api_key = None
        model = "local"
        fallback_model = None
        timeout_s = 12.0
        max_retries = 1

    settings = LLMSettings.from_config(Config(), backoff_base_s=0.1)
    assert (settings.model, settings.timeout_s, settings.max_retries, settings.backoff_base_s) == (
        "local",
        12.0,
        1,
        0.1,
    )
    assert settings.configured


# ---------------------------------------------------------------------------- scripted server itself


def test_server_without_steps_answers_500_and_lists_models(llm: ScriptedLLMServer):
    client = openai.OpenAI(base_url=llm.base_url, api_key="test", max_retries=0)
    with pytest.raises(openai.InternalServerError, match="scripted LLM: no step left"):
        client.chat.completions.create(model="gpt-4o-mini", messages=MESSAGES)
    assert "gpt-4o-mini" in [m.id for m in client.models.list()]


def test_fifty_concurrent_streams(llm: ScriptedLLMServer, llm_settings: LLMSettings):
    llm.responder = lambda body: Reply(chunks=["echo:", body["messages"][-1]["content"]], delay_s=0.02)
    provider = make(llm_settings, max_retries=0)
    results: dict[int, str] = {}
    errors: list[BaseException] = []

    def run(i: int) -> None:
        try:
            messages = [{"role": "user", "content": f"session {i}"}]
            results[i] = provider.chat(messages, label="bench", stream=True, on_token=lambda _t: None).text
        except BaseException as exc:  # noqa: BLE001 - collected and asserted below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(50)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=20)
    assert not errors
    assert results == {i: f"echo:session {i}" for i in range(50)}
    assert len(llm.requests) == 50


# ---------------------------------------------------------------------------- server guard


class _Guard:
    def __init__(self, cause: str | None) -> None:
        self.cause = cause
        self.calls = 0

    def recover(self) -> str | None:
        self.calls += 1
        return self.cause


def _closed_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_a_refused_connection_asks_the_guard_once_and_names_its_cause(llm_settings: LLMSettings):
    settings = dataclasses.replace(llm_settings, base_url=f"http://127.0.0.1:{_closed_port()}/v1", max_retries=3)
    guard = _Guard("the local model server stopped (exit status -11 (SIGSEGV)) and could not be restarted")
    provider = LLMProvider(settings, guard=guard)
    with pytest.raises(LLMUnavailable) as failure:
        provider.chat(MESSAGES, label="guarded")
    assert guard.calls == 1
    assert str(failure.value) == f"The assistant is unavailable: {guard.cause}."


def test_a_recovered_server_gets_the_call_again_then_the_usual_retries(llm_settings: LLMSettings):
    settings = dataclasses.replace(llm_settings, base_url=f"http://127.0.0.1:{_closed_port()}/v1", max_retries=1)
    guard = _Guard(None)  # "restarted": the call is tried again (here the port stays closed)
    provider = LLMProvider(settings, guard=guard)
    with pytest.raises(LLMUnavailable) as failure:
        provider.chat(MESSAGES, label="guarded")
    assert guard.calls == 1  # asked once per call, never in a loop
    assert "connection failed" in str(failure.value)


def test_a_call_that_shows_nothing_keeps_an_answer_completed_just_past_the_deadline(
    llm: ScriptedLLMServer, llm_settings: LLMSettings
):
    # a structured call streamed only to be cancellable shows no token: its last read, past the
    # deadline by a little, still completes it (no retry that could run out)
    provider = make(llm_settings, timeout_s=2.0, first_token_timeout_s=30, max_retries=0)
    late = Events([": ping\n\n", 'data: {"choices": [{"index": 0, "delta": {"content": "done"}}]}\n\n'
                   "data: [DONE]\n\n"], delay_s=1.2)
    llm.script(late)
    assert provider.chat(MESSAGES, label="quiet", stream=True).text == "done"
