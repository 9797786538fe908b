"""Incremental server-sent events decoder for OpenAI-style chat completion streams.

Pure: bytes in (split anywhere: inside a line, inside a CRLF, inside a UTF-8 character),
the JSON value of each completed event out. Only ``data:`` fields matter here: several
``data:`` lines of one event are joined with ``\\n``; comments (``:...``), ``event:``,
``id:``, ``retry:`` and unknown fields are ignored; a blank line ends an event (an event
without data is not dispatched, as the SSE spec says). ``data: [DONE]`` ends the stream:
nothing after it is decoded. An event whose JSON object carries a truthy ``error`` raises
:class:`StreamErrorEvent` (the ``openai`` client's ``Stream`` raises ``APIError`` there),
and an event that is not JSON raises ``json.JSONDecodeError`` (a ``ValueError``), as the
client's does.

Lines are split on bytes and decoded only once complete, so a multi-byte character split
across network reads is never cut; ``json.loads`` decodes the UTF-8.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

_LF = 10
_CR = 13
_DEFAULT_ERROR_MESSAGE = "An error occurred during streaming"
_json_decode = json.JSONDecoder().decode  # what json.loads runs on a str


def loads(payload: bytes) -> Any:
    """``json.loads(payload)``, faster for the usual event (strict UTF-8): ``json.loads`` of bytes
    guesses the encoding and decodes with ``surrogatepass``, which takes the codec's slow path
    (half of the time of a chunk's decoding). Whatever this fast path refuses (a BOM, UTF-16,
    an encoded surrogate, invalid JSON) goes to ``json.loads``: same value, same error."""
    try:
        return _json_decode(payload.decode())
    except ValueError:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        return json.loads(payload)


def _value(payload: bytes) -> Any:
    """An event's JSON value; an error event raises (see error_event)."""
    value = loads(payload)
    if type(value) is dict and value.get("error"):
        raise error_event(value)
    return value


class StreamErrorEvent(Exception):
    """The server sent ``{"error": ...}`` as a stream event (it failed while generating)."""

    def __init__(self, message: str, body: Any) -> None:
        super().__init__(message)
        self.message = message
        self.body = body


def error_event(payload: dict[str, Any]) -> StreamErrorEvent:
    error = payload.get("error")
    message = error.get("message") if isinstance(error, dict) else None
    if not message or not isinstance(message, str):
        message = _DEFAULT_ERROR_MESSAGE
    return StreamErrorEvent(message, error)


class SSEDecoder:
    """Feed raw body bytes with :meth:`feed`; ``done`` turns True at ``[DONE]``."""

    __slots__ = ("_data", "_pending", "_skip_lf", "done")

    def __init__(self) -> None:
        self._pending: list[bytes] = []  # the current line's bytes (no line end seen yet)
        self._data: list[bytes] = []  # the current event's data lines
        self._skip_lf = False  # the last chunk ended with CR: a leading LF completes that CRLF
        self.done = False

    def feed(self, chunk: bytes) -> list[Any]:
        """The JSON values of the events this chunk completes, in order."""
        if self.done or not chunk:
            return []
        if self._skip_lf:
            self._skip_lf = False
            if chunk[0] == _LF:
                chunk = chunk[1:]
                if not chunk:
                    return []
        if (
            chunk.startswith(b"data: ")
            and chunk.endswith(b"\n\n")
            and chunk.find(b"\n", 6) == len(chunk) - 2
            and not self._pending
            and not self._data
            and b"\r" not in chunk
        ):
            # The usual network read: exactly one event of one data line, nothing held before it.
            payload = chunk[6:-2]
            if payload.startswith(b"[DONE]"):
                self.done = True
                return []
            return [_value(payload)]
        if b"\r" in chunk:
            # Every line end becomes LF; a trailing CR may be the first half of a CRLF.
            self._skip_lf = chunk[-1] == _CR
            chunk = chunk.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        end = chunk.rfind(b"\n")
        if end < 0:
            self._pending.append(chunk)
            return []
        if self._pending:
            self._pending.append(chunk[:end])
            lines = b"".join(self._pending).split(b"\n")
            self._pending.clear()
        else:
            lines = chunk[:end].split(b"\n")
        if end + 1 < len(chunk):
            self._pending.append(chunk[end + 1 :])
        out: list[Any] = []
        data = self._data
        for line in lines:
            if not line:
                if not data:
                    continue  # no data: nothing to dispatch
                payload = data[0] if len(data) == 1 else b"\n".join(data)
                data.clear()
                if payload.startswith(b"[DONE]"):
                    self.done = True
                    self._pending.clear()
                    return out
                out.append(_value(payload))
            elif line.startswith(b"data"):
                if line[4:5] == b":":
                    value_bytes = line[5:]
                    data.append(value_bytes[1:] if value_bytes[:1] == b" " else value_bytes)
                elif len(line) == 4:  # "data" alone: the field with an empty value
                    data.append(b"")
                # else "dataX...": an unknown field, ignored
            # else: a comment (":...") or another field (event, id, retry, ...): ignored
        return out


def decode(chunks: Iterable[bytes]) -> list[Any]:
    """Every event of a whole stream (an incomplete trailing event is dropped, as in SSE)."""
    decoder = SSEDecoder()
    out: list[Any] = []
    for chunk in chunks:
        out.extend(decoder.feed(chunk))
        if decoder.done:
            break
    return out
