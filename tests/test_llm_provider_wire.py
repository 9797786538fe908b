"""LLMProvider on the wire: the raw request body, SSE decoded by hand, dict chunks, failures mid-stream.

Over real HTTP with the real openai client, against the scripted OpenAI-compatible server.
"""

from __future__ import annotations

import dataclasses
import json
import threading
from typing import Any

import pytest

from mojodex_core.llm import (
    LLMCancelled,
    LLMProvider,
    LLMRequestRejected,
    LLMSettings,
    LLMTimeout,
    LLMUnavailable,
)
from mojodex_core.llm.streaming import drain
from tests.support.scripted_llm import (
    DropMidStream,
    Events,
    Hang,
    HTTPError,
    Malformed,
    Reply,
    ScriptedLLMServer,
    StreamError,
    ToolCall,
)

MESSAGES = [{"role": "system", "content": "You are helpful."}, {"role": "user", "content": "Bonjour, ça va ?"}]



def make(settings: LLMSettings, **changes: Any) -> LLMProvider:
    return LLMProvider(dataclasses.replace(settings, **changes))


def chunk(delta: dict[str, Any] | None = None, finish: str | None = None, index: int = 0) -> dict[str, Any]:
    return {
        "id": "chatcmpl-wire",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "gpt-4o-mini",
        "choices": [{"index": index, "delta": delta or {}, "finish_reason": finish}],
    }


def usage_chunk(prompt: int, completion: int) -> dict[str, Any]:
    return {
        "id": "chatcmpl-wire",
        "object": "chat.completion.chunk",
        "choices": [],
        "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion},
    }


DONE = "data: [DONE]\n\n"


# ---------------------------------------------------------------------------- request


def test_the_request_is_the_plain_body(llm: ScriptedLLMServer, provider: LLMProvider):
    tool = {"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}
    llm.script(Reply("ok"), Reply("ok"))
    provider.chat(MESSAGES, label="s", stream=True, grammar='root ::= "ok"', tools=[tool], max_tokens=9)
    provider.chat(MESSAGES, label="n", temperature=0.5)
    streamed, plain = llm.requests
    assert streamed == {
        "model": "gpt-4o-mini",
        "messages": MESSAGES,
        "temperature": 0.0,
        "max_tokens": 9,
        "tools": [tool],
        "grammar": 'root ::= "ok"',  # extra_body is merged into the body, not sent as a key
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    assert plain == {"model": "gpt-4o-mini", "messages": MESSAGES, "temperature": 0.5}


# ---------------------------------------------------------------------------- stream decoding


def test_tool_call_chunks_are_merged_by_index(llm: ScriptedLLMServer, provider: LLMProvider):
    llm.script(Events([
        chunk({"role": "assistant", "content": ""}),
        chunk({"tool_calls": [{"index": 0, "id": "call_a", "type": "function",
                               "function": {"name": "look", "arguments": ""}}]}),
        chunk({"tool_calls": [{"index": 1, "id": "call_b", "type": "function",
                               "function": {"name": "other", "arguments": '{"x"'}}]}),
        chunk({"tool_calls": [{"index": 0, "function": {"name": "up", "arguments": '{"id"'}}]}),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": ": 3}"}},
                              {"index": 1, "function": {"arguments": ": 1}"}}]}),
        chunk({}, finish="tool_calls"),
        usage_chunk(11, 4),
        DONE,
    ]))
    result = provider.chat(MESSAGES, label="tools", stream=True, on_token=lambda _t: None)
    assert result.tool_calls == [
        {"id": "call_a", "type": "function", "function": {"name": "lookup", "arguments": '{"id": 3}'}},
        {"id": "call_b", "type": "function", "function": {"name": "other", "arguments": '{"x": 1}'}},
    ]
    assert result.finish_reason == "tool_calls"
    assert result.text == ""
    assert (result.prompt_tokens, result.completion_tokens, result.usage_estimated) == (11, 4, False)


def test_raw_sse_cut_across_writes(llm: ScriptedLLMServer, provider: LLMProvider):
    """Comments, CRLF, an event and a UTF-8 character cut across writes, a choice other than 0."""
    accented = "é🙂".encode()
    llm.script(Events([
        ": keep-alive\r\n\r\n",
        "event: message\r\nid: 1\r\n",
        'data: {"choices": [{"index": 0, "delta": {"content": "Bon"}, "finish_reason": null}]}\r',
        "\n\r\n",
        b'data: {"choices": [{"index": 0, "delta": {"content": "jour ' + accented[:3],
        accented[3:] + b'"}, "finish_reason": null}]}\r\n\r\n',
        chunk({"content": "ignored: choice 1"}, index=1),
        chunk({}, finish="stop"),
        usage_chunk(5, 2),
        DONE,
    ]))
    seen: list[str] = []
    result = provider.chat(MESSAGES, label="raw", stream=True, on_token=seen.append)
    assert seen == ["Bon", "jour é🙂"]
    assert result.text == "Bonjour é🙂"
    assert result.finish_reason == "stop"
    assert (result.prompt_tokens, result.completion_tokens) == (5, 2)


def test_events_after_done_are_ignored(llm: ScriptedLLMServer, provider: LLMProvider):
    llm.script(Events([chunk({"content": "one"}), chunk({}, finish="stop"), DONE, chunk({"content": " two"})]))
    result = provider.chat(MESSAGES, label="done", stream=True)
    assert result.text == "one"
    assert result.usage_estimated  # no usage chunk: estimated


def test_a_stream_ending_without_done_keeps_what_came(llm: ScriptedLLMServer, provider: LLMProvider):
    llm.script(Events([chunk({"content": "partial"}), chunk({}, finish="length")]))
    result = provider.chat(MESSAGES, label="nodone", stream=True)
    assert (result.text, result.finish_reason) == ("partial", "length")


# ---------------------------------------------------------------------------- non-streamed


def test_non_streamed_tool_calls_and_usage(llm: ScriptedLLMServer, provider: LLMProvider):
    llm.script(ToolCall("lookup", '{"id": 3}', usage=(21, 6), content_chunks=["<reasoning>r</reasoning>"]))
    result = provider.chat(MESSAGES, label="tools", tools=[{"type": "function", "function": {"name": "lookup"}}])
    assert result.tool_calls == [
        {"id": "call_scripted_1", "type": "function", "function": {"name": "lookup", "arguments": '{"id": 3}'}}
    ]
    assert result.text == "<reasoning>r</reasoning>"
    assert result.finish_reason == "tool_calls"
    assert (result.prompt_tokens, result.completion_tokens, result.usage_estimated) == (21, 6, False)


def test_a_body_without_choices_is_an_invalid_response(llm: ScriptedLLMServer, provider: LLMProvider):
    llm.script(Malformed(body=json.dumps({"id": "x", "object": "chat.completion", "choices": []})))
    with pytest.raises(LLMUnavailable, match="invalid response") as info:
        provider.chat(MESSAGES, label="empty")
    assert "without choices" in info.value.detail
    assert len(llm.requests) == 1  # malformed: not retried


# ---------------------------------------------------------------------------- failures mid-stream


def test_an_error_event_after_tokens_is_final(llm: ScriptedLLMServer, provider: LLMProvider, records):
    llm.script(StreamError(after_chunks=2, message="model overloaded"), Reply("must not be requested"))
    seen: list[str] = []
    with pytest.raises(LLMUnavailable, match="interrupted") as info:
        provider.chat(MESSAGES, label="err", stream=True, on_token=seen.append)
    assert seen == ["Hello", " there"]
    assert info.value.detail == "model overloaded"
    assert len(llm.requests) == 1
    assert "model overloaded" in records[0].error


def test_an_error_event_before_delivery_is_retried(llm: ScriptedLLMServer, provider: LLMProvider):
    llm.script(StreamError(after_chunks=0, message="model overloaded"), Reply("second try"))
    result = provider.chat(MESSAGES, label="err", stream=True, on_token=lambda _t: None)
    assert (result.text, result.attempts) == ("second try", 2)


def test_an_error_event_on_the_last_attempt(llm: ScriptedLLMServer, llm_settings: LLMSettings):
    provider = make(llm_settings, max_retries=0)
    llm.script(StreamError(after_chunks=1, message="boom"))
    with pytest.raises(LLMUnavailable) as info:
        provider.chat(MESSAGES, label="err", stream=True)
    assert str(info.value) == "The assistant is unavailable (server error after 1 attempt)."
    assert info.value.detail == "boom"


def test_a_malformed_event_mid_stream(llm: ScriptedLLMServer, provider: LLMProvider):
    broken = [chunk({"content": "Hi"}), 'data: {"choices": [ not json\n\n', DONE]
    llm.script(Events(broken), Events(broken), Reply("never"))
    with pytest.raises(LLMUnavailable, match="invalid response"):
        provider.chat(MESSAGES, label="bad", stream=True)
    with pytest.raises(LLMUnavailable, match="interrupted"):
        provider.chat(MESSAGES, label="bad", stream=True, on_token=lambda _t: None)
    assert len(llm.requests) == 2  # malformed is never retried


def test_content_that_is_not_text_is_an_invalid_response_not_a_crash(llm: ScriptedLLMServer, provider: LLMProvider):
    # was: a number as content reached the token callback, whose TypeError ended the turn as an
    # internal error with a traceback
    llm.script(Events([chunk({"content": 5}), DONE]), Events([chunk({"content": ["a"]}), DONE]))
    seen: list[str] = []
    for _ in range(2):
        with pytest.raises(LLMUnavailable, match="invalid response"):
            provider.chat(MESSAGES, label="typed", stream=True, on_token=lambda t: seen.append(t + ""))
    assert seen == []
    not_streamed = {"id": "x", "object": "chat.completion", "choices": [{"index": 0, "message": {"content": 5}}]}
    llm.script(Malformed(body=json.dumps(not_streamed)))
    with pytest.raises(LLMUnavailable, match="invalid response"):  # was: 5 as the reply's text
        provider.chat(MESSAGES, label="typed")


def test_an_event_of_the_wrong_shape_is_an_invalid_response(llm: ScriptedLLMServer, provider: LLMProvider):
    llm.script(Events(["data: [1, 2]\n\n", DONE]), Events(['data: {"choices": [7]}\n\n', DONE]))
    with pytest.raises(LLMUnavailable, match="invalid response"):
        provider.chat(MESSAGES, label="shape", stream=True)
    with pytest.raises(LLMUnavailable, match="invalid response"):
        provider.chat(MESSAGES, label="shape", stream=True)


def test_a_disconnect_mid_stream(llm: ScriptedLLMServer, llm_settings: LLMSettings):
    provider = make(llm_settings, max_retries=1)
    llm.script(DropMidStream(after_chunks=1), DropMidStream(after_chunks=3))
    with pytest.raises(LLMUnavailable, match=r"connection failed after 2 attempts") as info:
        provider.chat(MESSAGES, label="drop", stream=True)
    assert info.value.detail  # the transport error, for the logs
    assert len(llm.requests) == 2


def test_a_hang_before_the_first_token_times_out(llm: ScriptedLLMServer, llm_settings: LLMSettings):
    provider = make(llm_settings, first_token_timeout_s=0.3, max_retries=0)
    llm.script(Hang(seconds=5, after_headers=True))
    with pytest.raises(LLMTimeout, match="nothing within 0.3s") as info:
        provider.chat(MESSAGES, label="hang", stream=True)
    assert info.value.detail == "Request timed out."


def test_a_stream_longer_than_the_overall_timeout(llm: ScriptedLLMServer, llm_settings: LLMSettings):
    provider = make(llm_settings, timeout_s=0.6, first_token_timeout_s=0.5, max_retries=0)
    llm.script(Reply(chunks=[f"t{i} " for i in range(40)], delay_s=0.05))  # every gap short, 2 s in all
    seen: list[str] = []
    with pytest.raises(LLMTimeout, match="timed out before it was complete") as info:
        provider.chat(MESSAGES, label="long", stream=True, on_token=seen.append)
    assert 3 <= len(seen) < 40
    assert "still running after 0.6s" in info.value.detail


def test_cancel_while_streaming_then_the_next_call_works(llm: ScriptedLLMServer, provider: LLMProvider):
    llm.script(Reply(chunks=[f"t{i} " for i in range(40)], delay_s=0.05), Reply("after"))
    cancel = threading.Event()
    seen: list[str] = []

    def on_token(token: str) -> None:
        seen.append(token)
        if len(seen) == 2:
            cancel.set()

    with pytest.raises(LLMCancelled):
        provider.chat(MESSAGES, label="cancel", stream=True, on_token=on_token, cancel=cancel)
    assert seen == ["t0 ", "t1 "]
    assert provider.chat(MESSAGES, label="next", stream=True).text == "after"


# ---------------------------------------------------------------------------- keep-alive


def test_calls_in_a_row_reuse_one_connection(llm: ScriptedLLMServer, provider: LLMProvider):
    """A stream read to [DONE] must leave its connection in the pool (the SDK's Stream closed it
    before the body's last chunk, so every streamed call opened a new connection)."""
    tool = [{"type": "function", "function": {"name": "lookup"}}]
    llm.script(
        Reply("one two three"),
        Reply("four five"),
        ToolCall("lookup", '{"id": 1}'),
        Reply("plain"),
        HTTPError(400, message="bad request"),
        Reply(chunks=["six", " seven"]),
        StreamError(after_chunks=1),
        Reply("eight"),
    )
    before = llm.connections
    provider.chat(MESSAGES, label="ka", stream=True)
    provider.chat(MESSAGES, label="ka", stream=True, on_token=lambda _t: None)
    provider.chat(MESSAGES, label="ka", stream=True, tools=tool)
    provider.chat(MESSAGES, label="ka")
    with pytest.raises(LLMRequestRejected):
        provider.chat(MESSAGES, label="ka", stream=True)
    assert provider.chat(MESSAGES, label="ka", stream=True).text == "six seven"
    assert llm.connections - before == 1
    # A stream that fails midway is closed unread: its connection goes, the retry opens one.
    assert provider.chat(MESSAGES, label="ka", stream=True).text == "eight"
    assert len(llm.requests) == 8
    assert llm.connections - before == 2


def test_concurrent_streams_are_pooled(llm: ScriptedLLMServer, provider: LLMProvider):
    llm.responder = lambda body: Reply(chunks=["a", "b", "c"], delay_s=0.01)
    before = llm.connections
    for _ in range(3):
        threads = [threading.Thread(target=provider.chat, args=(MESSAGES,), kwargs={"label": "ka", "stream": True})
                   for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=10)
    assert len(llm.requests) == 12
    assert llm.connections - before <= 4  # rounds two and three reuse the first round's connections


def test_drain_reads_the_end_of_the_body_within_a_limit():
    read: list[bytes] = []

    def body(pieces: list[bytes], fail: BaseException | None = None):
        for piece in pieces:
            read.append(piece)
            yield piece
        if fail is not None:
            raise fail

    drain(body([b"", b"tail"]))
    assert read == [b"", b"tail"]
    read.clear()
    drain(body([b"x" * 40_000] * 5), limit=64 * 1024)
    assert len(read) == 2  # gave up past the limit
    read.clear()
    drain(body([b"x"], fail=OSError("reset")))  # the answer is complete: a failure here is not raised
    assert read == [b"x"]
