"""The SSE decoder alone: bytes split anywhere decode to the same events."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mojodex_core.llm.sse import SSEDecoder, StreamErrorEvent, decode, loads


def chunk_event(content: str, index: int = 0) -> dict:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "choices": [{"index": index, "delta": {"content": content}, "finish_reason": None}],
    }


# Non-ASCII content on purpose: é (2 bytes), € (3 bytes), 🙂 (4 bytes) end up split by the loops below.
CONTENTS = ["Bonjour", " é€🙂", " line\nbreak", ' "quoted" ', "日本語"]
EXPECTED = [chunk_event(c) for c in CONTENTS] + [{"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 5}}]


def stream_bytes(newline: str = "\n") -> bytes:
    """A realistic stream: a comment, event/id/retry fields, one multi-line data event, [DONE]."""
    nl = newline
    parts = [f": keep-alive comment{nl}{nl}", f"retry: 1000{nl}"]
    for i, content in enumerate(CONTENTS):
        data = json.dumps(chunk_event(content), ensure_ascii=False)
        if i == 2:
            # One JSON value spread over three data lines (joined with \n: still the same JSON).
            head, tail = data.split('"delta"', 1)
            parts.append(f"id: {i}{nl}data: {head}{nl}data:\"delta\"{nl}data: {tail}{nl}{nl}")
        else:
            parts.append(f"event: message{nl}id: {i}{nl}data: {data}{nl}{nl}")
    parts.append(f"data: {json.dumps(EXPECTED[-1])}{nl}{nl}")
    parts.append(f"data: [DONE]{nl}{nl}")
    parts.append(f"data: {json.dumps(chunk_event('after done'))}{nl}{nl}")  # never decoded
    return "".join(parts).encode("utf-8")


NEWLINES = {"lf": "\n", "crlf": "\r\n", "cr": "\r"}


@pytest.mark.parametrize("newline", NEWLINES.values(), ids=NEWLINES.keys())
def test_whole_stream(newline: str):
    decoder = SSEDecoder()
    assert decoder.feed(stream_bytes(newline)) == EXPECTED
    assert decoder.done


@pytest.mark.parametrize("newline", NEWLINES.values(), ids=NEWLINES.keys())
def test_every_split_point(newline: str):
    raw = stream_bytes(newline)
    assert any(b >= 0x80 for b in raw)
    for cut in range(len(raw) + 1):
        assert decode([raw[:cut], raw[cut:]]) == EXPECTED, f"split at byte {cut}"


@pytest.mark.parametrize("newline", NEWLINES.values(), ids=NEWLINES.keys())
def test_one_byte_at_a_time(newline: str):
    raw = stream_bytes(newline)
    assert decode([raw[i : i + 1] for i in range(len(raw))]) == EXPECTED


def test_crlf_split_between_cr_and_lf_is_one_line_end():
    raw = b'data: {"a": 1}\r\n\r\ndata: {"a": 2}\r\n\r\n'
    for cut in range(len(raw) + 1):
        assert decode([raw[:cut], raw[cut:]]) == [{"a": 1}, {"a": 2}]
    # CR CR is two line ends (an event boundary); CR then LF in the next read is one.
    assert decode([b'data: {"a": 1}\r', b"\r"]) == [{"a": 1}]
    assert decode([b'data: {"a": 1}\r', b"\n"]) == []
    assert decode([b'data: {"a": 1}\r', b"", b"\n", b"\n"]) == [{"a": 1}]


def test_multibyte_character_split_across_reads():
    raw = 'data: {"t": "🙂€é"}\n\n'.encode()
    start = raw.index("🙂".encode())
    for cut in range(start, start + 9):
        assert decode([raw[:cut], raw[cut:]]) == [{"t": "🙂€é"}]


@settings(max_examples=300, deadline=None)
@given(
    newline=st.sampled_from(list(NEWLINES.values())),
    cuts=st.lists(st.integers(min_value=0, max_value=10_000), max_size=40),
)
def test_random_splits(newline: str, cuts: list[int]):
    raw = stream_bytes(newline)
    points = sorted({c % (len(raw) + 1) for c in cuts})
    pieces = [raw[a:b] for a, b in zip([0, *points], [*points, len(raw)], strict=True)]
    assert b"".join(pieces) == raw
    assert decode(pieces) == EXPECTED


def test_fields_without_space_and_data_without_value():
    assert decode([b'data:{"a":1}\n\n']) == [{"a": 1}]
    # "data" alone is the data field with an empty value: joined, the JSON is unchanged.
    assert decode([b'data: {"a":\ndata\ndata: 1}\n\n']) == [{"a": 1}]
    # Lines are joined with a line feed, not glued: "1" and "2" are not the number 12.
    with pytest.raises(ValueError, match="Extra data"):
        decode([b"data: 1\ndata: 2\n\n"])
    # Unknown fields (and a "data"-prefixed unknown one) are ignored.
    assert decode([b'database: nope\nfoo: bar\ndata: {"a": 2}\n\n']) == [{"a": 2}]


def test_event_without_data_is_not_dispatched():
    assert decode([b"event: ping\n\n: comment\n\nid: 7\n\n", b'data: {"a": 1}\n\n']) == [{"a": 1}]


def test_incomplete_trailing_event_is_dropped():
    assert decode([b'data: {"a": 1}\n\ndata: {"a": 2}\n']) == [{"a": 1}]


def test_done_stops_decoding():
    decoder = SSEDecoder()
    assert decoder.feed(b'data: {"a": 1}\n\ndata: [DONE]\n\ndata: {"a": 2}\n\n') == [{"a": 1}]
    assert decoder.done
    assert decoder.feed(b'data: {"a": 3}\n\n') == []


def test_error_event_raises_with_its_message_and_body():
    raw = b'data: {"a": 1}\n\ndata: {"error": {"message": "model overloaded", "type": "server_error"}}\n\n'
    decoder = SSEDecoder()
    with pytest.raises(StreamErrorEvent, match="model overloaded") as info:
        decoder.feed(raw)
    assert info.value.body == {"message": "model overloaded", "type": "server_error"}
    with pytest.raises(StreamErrorEvent, match="An error occurred during streaming"):
        decode([b'data: {"error": "boom"}\n\n'])
    # A falsy "error" is not an error event (as in the openai client).
    assert decode([b'data: {"error": null, "a": 1}\n\n']) == [{"error": None, "a": 1}]


def test_malformed_event_raises_a_value_error():
    with pytest.raises(ValueError):
        decode([b'data: {"id": "broken", "choices": [ this is not json\n\n'])
    with pytest.raises(ValueError):
        decode([b'data: {"a": "\xff"}\n\n'])  # not UTF-8


@pytest.mark.parametrize("payload", [
    b'{"choices": [{"delta": {"content": "caf\xc3\xa9 \\u00e9"}}]}',
    b"\xef\xbb\xbf{}",  # a UTF-8 BOM: json.loads of bytes accepts it, of str refuses it
    '{"a": "é"}'.encode("utf-16"),
    '{"a": 1}'.encode("utf-16-le"),
    '{"a": 1}'.encode("utf-32"),
    b'{"a": "\xed\xa0\x80"}',  # an encoded surrogate (json.loads decodes with surrogatepass)
    b'{"a": \xff}', b'{"a": 1} x', b"", b"  [1, 2] ", b'"\x00"', b"1\x00\x00\x00",
])
def test_loads_is_json_loads(payload):
    try:
        want = ("value", json.loads(payload))
    except ValueError as exc:
        want = ("error", type(exc), str(exc))
    try:
        got = ("value", loads(payload))
    except ValueError as exc:
        got = ("error", type(exc), str(exc))
    assert got == want


@pytest.mark.parametrize("events", [
    [b'data: {"a": 1}\n\n', b'data: {"b": "\xc3\xa9"}\n\n', b"data: [DONE]\n\n", b'data: {"c": 3}\n\n'],
    [b'data: {"a": 1}\n\n', b'data: {"a": 2}\n\ndata: {"a": 3}\n\n', b"data: [DONE]\n\n"],
    [b"data: [1]\n\n", b'data: {"a"', b': 1}\n\n', b'data: {"b": 2}\n\n'],  # a read after a held line
    [b"data: [1,\n", b"data: 2]\n\n", b"data: [3]\n\n"],  # a data line held for the next read's event
    [b'data: {"a": 1}\r\n\r\n', b'data: {"a": 2}\n\n', b'data: {"a": 3}\r', b'\n\r\ndata: {"a": 4}\n\n'],
    [b'data: {"a": 3}\r\r', b'\ndata: {"a": 4}\n\n'],  # the LF of a CRLF split off, then a whole event
])
def test_one_event_per_read_decodes_as_byte_by_byte(events):
    """The usual network read is one whole event (a fast path): the same values as any split."""
    raw = b"".join(events)
    assert decode(events) == decode([raw[i : i + 1] for i in range(len(raw))])


def test_a_whole_error_event_raises():
    decoder = SSEDecoder()
    with pytest.raises(StreamErrorEvent, match="boom"):
        decoder.feed(b'data: {"error": {"message": "boom"}}\n\n')
