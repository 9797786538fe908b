"""A scripted OpenAI-compatible HTTP server for tests.

It speaks just enough of the OpenAI REST API for the official ``openai`` client
(and anything else that talks to an OpenAI-compatible endpoint) to be driven over
real HTTP, with per-test scripts:

    server = ScriptedLLMServer().start()          # server.base_url -> "http://127.0.0.1:PORT/v1"
    server.script(Reply("hello"), HTTPError(429), Reply(chunks=["a", "b"], delay_s=0.01))
    ...
    server.requests                                # JSON bodies received, in order
    server.connections                             # TCP connections accepted so far (keep-alive checks)
    server.reset(); server.stop()

Each ``POST /v1/chat/completions`` consumes the next scripted step. When the queue is
empty, ``server.responder(request_json)`` is asked for a step (dynamic answers); when
there is no responder either, the server answers HTTP 500 "scripted LLM: no step left"
so that a test that under-scripts fails loudly.

``POST /v1/audio/transcriptions`` (multipart, like OpenAI's Whisper endpoint) has its own queue:
``server.script_transcription(Transcription("hello", duration=1.5), HTTPError(500))``; each
request consumes one step and is recorded in ``server.transcription_requests`` (the form fields,
the file's name, content type and size; the raw bodies are in ``server.transcription_uploads``). With the
queue empty, ``server.transcript`` (a text, when set) answers every request; else HTTP 500.
``POST /v1/audio/speech`` likewise: ``server.script_speech(Speech(b"..."))``, ``server.speech_requests``.

Requests are served on their own threads (``ThreadingHTTPServer``), with HTTP/1.1
keep-alive and chunked transfer for streams, so dozens of concurrent streaming
clients are fine.
"""

from __future__ import annotations

import json as _json
import re
import socket
import sys
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

__all__ = [
    "DropMidStream",
    "Events",
    "HTTPError",
    "Hang",
    "Malformed",
    "Reply",
    "ScriptedLLMServer",
    "Step",
    "StreamError",
    "ToolCall",
    "Speech",
    "Transcription",
]


# --------------------------------------------------------------------------- steps


@dataclass
class Reply:
    """A successful completion.

    ``Reply("text")`` answers with that text (streamed word by word when the request
    streams); ``Reply(chunks=[...])`` fixes the streamed chunks (joined when the
    request does not stream); ``Reply(json={...})`` answers the dict serialised as JSON.
    ``usage=(prompt, completion)`` fixes the reported usage (default: ~len/4 estimates);
    ``include_usage=False`` omits usage entirely (even when the client asked for it).
    ``delay_s`` is slept before each streamed chunk (before the body when not streaming).
    """

    text: str | None = None
    chunks: list[str] | None = None
    json: Any = None
    usage: tuple[int, int] | None = None
    delay_s: float = 0.0
    finish_reason: str = "stop"
    model: str | None = None
    include_usage: bool = True

    def content(self) -> str:
        if self.json is not None:
            return _json.dumps(self.json)
        if self.chunks is not None:
            return "".join(self.chunks)
        return self.text or ""

    def stream_chunks(self) -> list[str]:
        if self.chunks is not None:
            return list(self.chunks)
        text = self.content()
        # Word-ish pieces (whitespace kept) so on_token sees several calls.
        return re.findall(r"\s*\S+\s*|\s+", text) or [""]


@dataclass
class HTTPError:
    """An HTTP error answer with an OpenAI-style error body."""

    status: int
    message: str | None = None
    headers: dict[str, str] | None = None

    def body(self) -> dict[str, Any]:
        kind = {
            400: "invalid_request_error",
            401: "authentication_error",
            404: "not_found_error",
            429: "rate_limit_exceeded",
        }.get(self.status, "server_error")
        message = self.message or f"scripted HTTP {self.status}"
        return {"error": {"message": message, "type": kind, "param": None, "code": kind}}


@dataclass
class Malformed:
    """HTTP 200 whose body is not valid JSON (or, streamed, an SSE event that is not JSON)."""

    body: str = '{"id": "broken", "choices": [ this is not json'


@dataclass
class Hang:
    """Say nothing for ``seconds`` (no status line), then drop the connection.

    With ``after_headers=True`` (streamed requests) the 200 status and SSE headers are
    sent first, then nothing: a stalled stream before the first token.
    ``reset()``/``stop()`` release hanging handlers early.
    """

    seconds: float = 5.0
    after_headers: bool = False


@dataclass
class DropMidStream:
    """Stream ``after_chunks`` content chunks, then close the connection abruptly
    (a truncated chunked body, so the client sees a protocol error)."""

    after_chunks: int = 2
    chunks: list[str] = field(default_factory=lambda: ["Hello", " there", ", how", " are", " you"])
    delay_s: float = 0.0


@dataclass
class Events:
    """Streamed: these pieces of body, one write each, then the end of the body (nothing added).

    A dict is sent as one event (``data: <json>\\n\\n``); a str or bytes is written verbatim (raw
    SSE: comments, CRLF line ends, events cut anywhere, ``data: [DONE]``). Not streamed: HTTP 400.
    ``delay_s`` is slept before each piece (keep-alive comments of a slow proxy, say).
    """

    pieces: list[Any]
    delay_s: float = 0.0


@dataclass
class StreamError:
    """Stream ``after_chunks`` content chunks, then an event ``{"error": {"message": ...}}`` (a server
    that failed while generating), then end the stream normally. Not streamed: an HTTP 500."""

    after_chunks: int = 2
    message: str = "scripted error while generating"
    chunks: list[str] = field(default_factory=lambda: ["Hello", " there", ", how", " are", " you"])


@dataclass
class ToolCall:
    """An assistant message carrying one tool call (``finish_reason="tool_calls"``)."""

    name: str
    arguments_json: str = "{}"
    id: str = "call_scripted_1"
    usage: tuple[int, int] | None = None
    # Text streamed (as these chunks) before the call, e.g. a <reasoning> tag.
    content_chunks: list[str] = field(default_factory=list)


@dataclass
class Transcription:
    """A successful ``/audio/transcriptions`` answer (``verbose_json`` when asked, else ``json``)."""

    text: str
    duration: float | None = None
    language: str = "english"
    delay_s: float = 0.0


@dataclass
class Speech:
    """A successful ``/audio/speech`` answer: these bytes as audio/mpeg."""

    content: bytes = b"ID3\x04\x00scripted-mp3"


Step = Reply | HTTPError | Malformed | Hang | DropMidStream | Events | StreamError | ToolCall
TranscriptionStep = Transcription | HTTPError | Hang
Responder = Callable[[dict[str, Any]], "Step | None"]


def asks_structured(body: dict[str, Any]) -> bool:
    """Whether a request is a structured call (``LLMProvider.structured``: it sends a
    response_format), streamed or not: one given a cancel (the title job's) is streamed, so a
    responder cannot tell it by its not being streamed."""
    return "response_format" in body


def _estimate_tokens(text: str) -> int:
    return max(1, (len(text) + 3) // 4)


def _prompt_text(body: dict[str, Any]) -> str:
    parts: list[str] = []
    for message in body.get("messages") or []:
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, str):
            parts.append(content)
        elif isinstance(content, list):
            parts.extend(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return "\n".join(parts)


# --------------------------------------------------------------------------- HTTP


class _ClientGone(Exception):
    pass


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # as real servers do: each streamed chunk leaves at once
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass  # keep test output clean

    # ---- low-level writers

    def _send_json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        self._send_raw(status, _json.dumps(payload).encode(), "application/json", headers)

    def _send_raw(
        self, status: int, data: bytes, content_type: str, headers: dict[str, str] | None = None
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()

    def _start_stream(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.wfile.flush()

    def _write_chunk(self, data: bytes) -> None:
        try:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()
        except OSError as exc:  # client went away (cancel, timeout)
            raise _ClientGone() from exc

    def _event(self, payload: Any) -> None:
        data = payload if isinstance(payload, str) else _json.dumps(payload)
        self._write_chunk(f"data: {data}\n\n".encode())

    def _end_stream(self) -> None:
        self._write_chunk(b"")  # zero-length chunk terminates the chunked body

    def _abort(self) -> None:
        """Close the socket without finishing the response."""
        self.close_connection = True
        try:
            self.wfile.flush()
        except OSError:
            pass
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    # ---- routes

    def do_GET(self) -> None:
        if self.path.rstrip("/").endswith("/models"):
            data = [
                {"id": m, "object": "model", "created": 0, "owned_by": "scripted"}
                for m in self.server.owner.models
            ]
            self._send_json(200, {"object": "list", "data": data})
        else:
            self._send_json(404, {"error": {"message": f"no route GET {self.path}", "type": "not_found"}})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if self.path.rstrip("/").endswith("/audio/transcriptions"):
            self._transcription(raw)
            return
        if self.path.rstrip("/").endswith("/audio/speech"):
            self._speech(raw)
            return
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self._send_json(404, {"error": {"message": f"no route POST {self.path}", "type": "not_found"}})
            return
        try:
            body = _json.loads(raw or b"{}")
        except ValueError:
            self._send_json(
                400, {"error": {"message": "request body is not JSON", "type": "invalid_request"}}
            )
            return
        owner = self.server.owner
        step, release = owner._next_step(body)
        try:
            self._serve(step, body, release)
        except _ClientGone:
            self.close_connection = True
        except OSError:
            self.close_connection = True

    def _transcription(self, raw: bytes) -> None:
        form = _multipart(self.headers.get("Content-Type") or "", raw)
        owner = self.server.owner
        step, release = owner._next_transcription(form, raw)
        try:
            if step is None:
                self._send_json(500, {"error": {"message": "scripted transcription: no step left",
                                                "type": "server_error"}})
            elif isinstance(step, HTTPError):
                self._send_json(step.status, step.body(), step.headers)
            elif isinstance(step, Hang):
                release.wait(step.seconds)
                self._abort()
            else:
                if step.delay_s:
                    time.sleep(step.delay_s)
                payload: dict[str, Any] = {"text": step.text}
                if form.get("response_format") == "verbose_json":
                    payload.update({"task": "transcribe", "language": step.language,
                                    "duration": step.duration if step.duration is not None else 0.0,
                                    "segments": []})
                self._send_json(200, payload)
        except OSError:
            self.close_connection = True

    def _speech(self, raw: bytes) -> None:
        try:
            body = _json.loads(raw or b"{}")
        except ValueError:
            body = {}
        step, _release = self.server.owner._next_speech(body)
        if step is None:
            self._send_json(500, {"error": {"message": "scripted speech: no step left", "type": "server_error"}})
        elif isinstance(step, HTTPError):
            self._send_json(step.status, step.body(), step.headers)
        else:
            self._send_raw(200, step.content, "audio/mpeg")

    # ---- step rendering

    def _serve(self, step: Step | None, body: dict[str, Any], release: threading.Event) -> None:
        stream = bool(body.get("stream"))
        if step is None:
            self._send_json(500, {"error": {"message": "scripted LLM: no step left", "type": "server_error"}})
        elif isinstance(step, HTTPError):
            self._send_json(step.status, step.body(), step.headers)
        elif isinstance(step, Malformed):
            if stream:
                self._start_stream()
                self._event(step.body)
                self._event("[DONE]")
                self._end_stream()
            else:
                self._send_raw(200, step.body.encode(), "application/json")
        elif isinstance(step, Hang):
            if step.after_headers and stream:
                self._start_stream()
            release.wait(step.seconds)
            self._abort()
        elif isinstance(step, DropMidStream):
            self._drop(step, body, stream)
        elif isinstance(step, StreamError):
            self._stream_error(step, body, stream)
        elif isinstance(step, Events):
            self._events(step, stream)
        elif isinstance(step, ToolCall):
            self._tool_call(step, body, stream)
        elif isinstance(step, Reply):
            if stream:
                self._stream_reply(step, body, release)
            else:
                self._reply(step, body)
        else:  # pragma: no cover - a test bug
            self._send_json(500, {"error": {"message": f"scripted LLM: unknown step {step!r}"}})

    def _envelope(self, body: dict[str, Any], model: str | None, obj: str) -> dict[str, Any]:
        return {
            "id": "chatcmpl-" + uuid.uuid4().hex[:12],
            "object": obj,
            "created": int(time.time()),
            "model": model or body.get("model") or "scripted",
        }

    def _usage(self, body: dict[str, Any], completion: str, fixed: tuple[int, int] | None) -> dict[str, int]:
        prompt_tokens, completion_tokens = fixed or (
            _estimate_tokens(_prompt_text(body)),
            _estimate_tokens(completion),
        )
        return {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        }

    def _wants_usage(self, body: dict[str, Any]) -> bool:
        options = body.get("stream_options") or {}
        return bool(isinstance(options, dict) and options.get("include_usage"))

    def _reply(self, step: Reply, body: dict[str, Any]) -> None:
        if step.delay_s:
            time.sleep(step.delay_s)
        content = step.content()
        payload = self._envelope(body, step.model, "chat.completion")
        payload["choices"] = [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": step.finish_reason,
            }
        ]
        if step.include_usage:
            payload["usage"] = self._usage(body, content, step.usage)
        self._send_json(200, payload)

    def _chunk(self, body: dict[str, Any], model: str | None, delta: dict[str, Any], finish: str | None):
        payload = self._envelope(body, model, "chat.completion.chunk")
        payload["choices"] = [{"index": 0, "delta": delta, "finish_reason": finish}]
        return payload

    def _stream_reply(self, step: Reply, body: dict[str, Any], release: threading.Event) -> None:
        self._start_stream()
        self._event(self._chunk(body, step.model, {"role": "assistant", "content": ""}, None))
        for piece in step.stream_chunks():
            if step.delay_s and release.wait(step.delay_s):
                self._abort()  # reset()/stop() while streaming
                return
            self._event(self._chunk(body, step.model, {"content": piece}, None))
        self._event(self._chunk(body, step.model, {}, step.finish_reason))
        if self._wants_usage(body) and step.include_usage:
            final = self._envelope(body, step.model, "chat.completion.chunk")
            final["choices"] = []
            final["usage"] = self._usage(body, step.content(), step.usage)
            self._event(final)
        self._event("[DONE]")
        self._end_stream()

    def _drop(self, step: DropMidStream, body: dict[str, Any], stream: bool) -> None:
        sent = step.chunks[: step.after_chunks]
        if stream:
            self._start_stream()
            self._event(self._chunk(body, None, {"role": "assistant", "content": ""}, None))
            for piece in sent:
                if step.delay_s:
                    time.sleep(step.delay_s)
                self._event(self._chunk(body, None, {"content": piece}, None))
        else:
            # Promise a longer body than we send.
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", "100000")
            self.end_headers()
            self.wfile.write(b'{"id": "chatcmpl-dropped", "choices": [')
        self._abort()

    def _events(self, step: Events, stream: bool) -> None:
        if not stream:
            self._send_json(400, {"error": {"message": "scripted LLM: Events needs a streamed request",
                                            "type": "invalid_request_error"}})
            return
        self._start_stream()
        for piece in step.pieces:
            if step.delay_s:
                time.sleep(step.delay_s)
            if isinstance(piece, dict):
                self._event(piece)
            elif piece:  # an empty chunk would end the body
                self._write_chunk(piece.encode() if isinstance(piece, str) else piece)
        self._end_stream()

    def _stream_error(self, step: StreamError, body: dict[str, Any], stream: bool) -> None:
        error = {"message": step.message, "type": "server_error", "param": None, "code": None}
        if not stream:
            self._send_json(500, {"error": error})
            return
        self._start_stream()
        self._event(self._chunk(body, None, {"role": "assistant", "content": ""}, None))
        for piece in step.chunks[: step.after_chunks]:
            self._event(self._chunk(body, None, {"content": piece}, None))
        self._event({"error": error})
        self._event("[DONE]")
        self._end_stream()

    def _tool_call(self, step: ToolCall, body: dict[str, Any], stream: bool) -> None:
        call = {
            "id": step.id,
            "type": "function",
            "function": {"name": step.name, "arguments": step.arguments_json},
        }
        if not stream:
            payload = self._envelope(body, None, "chat.completion")
            payload["choices"] = [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": "".join(step.content_chunks) or None,
                                "tool_calls": [call]},
                    "finish_reason": "tool_calls",
                }
            ]
            payload["usage"] = self._usage(body, step.arguments_json, step.usage)
            self._send_json(200, payload)
            return
        self._start_stream()
        for piece in step.content_chunks:
            self._event(self._chunk(body, None, {"role": "assistant", "content": piece}, None))
        first = {
            "index": 0,
            "id": step.id,
            "type": "function",
            "function": {"name": step.name, "arguments": ""},
        }
        self._event(
            self._chunk(body, None, {"role": "assistant", "content": None, "tool_calls": [first]}, None)
        )
        rest = {"index": 0, "function": {"arguments": step.arguments_json}}
        self._event(self._chunk(body, None, {"tool_calls": [rest]}, None))
        self._event(self._chunk(body, None, {}, "tool_calls"))
        if self._wants_usage(body):
            final = self._envelope(body, None, "chat.completion.chunk")
            final["choices"] = []
            final["usage"] = self._usage(body, step.arguments_json, step.usage)
            self._event(final)
        self._event("[DONE]")
        self._end_stream()


def _multipart(content_type: str, raw: bytes) -> dict[str, Any]:
    """The fields of a multipart/form-data body; the file as {filename, content_type, size, head}."""
    from email.parser import BytesParser
    from email.policy import HTTP

    message = BytesParser(policy=HTTP).parsebytes(b"Content-Type: " + content_type.encode() + b"\r\n\r\n" + raw)
    form: dict[str, Any] = {}
    if not message.is_multipart():
        return form
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        payload = part.get_payload(decode=True) or b""
        filename = part.get_filename()
        if filename is not None:
            form[name] = {"filename": filename, "content_type": part.get_content_type(), "size": len(payload),
                          "head": payload[:16]}
        else:
            form[name] = payload.decode("utf-8", "replace")
    return form


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 512  # bursts of concurrent clients
    allow_reuse_address = True
    owner: ScriptedLLMServer

    def get_request(self) -> tuple[socket.socket, Any]:
        accepted = super().get_request()
        self.owner._count_connection()
        return accepted

    def handle_error(self, request: Any, client_address: Any) -> None:
        # Client disconnects are expected (cancel, timeouts); anything else is printed.
        exc = sys.exc_info()[1]
        if isinstance(exc, (ConnectionError, _ClientGone, TimeoutError)):
            return
        super().handle_error(request, client_address)


# --------------------------------------------------------------------------- facade


class ScriptedLLMServer:
    """Real HTTP server answering chat completions from a per-test script."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0, models: list[str] | None = None) -> None:
        self._host = host
        self._port = port
        self.models: list[str] = list(models or ["gpt-4o-mini", "gpt-4o", "scripted"])
        self.responder: Responder | None = None
        self._lock = threading.Lock()
        self._queue: deque[Step] = deque()
        self._requests: list[dict[str, Any]] = []
        self._transcriptions: deque[TranscriptionStep] = deque()
        self._transcription_requests: list[dict[str, Any]] = []
        self._speeches: deque[Speech | HTTPError] = deque()
        self._speech_requests: list[dict[str, Any]] = []
        # /audio/transcriptions answers this text; the multipart bodies received are kept.
        self.transcript: str | None = None
        self.transcription_uploads: list[bytes] = []
        self._release = threading.Event()
        self._connections = 0
        self._httpd: _Server | None = None
        self._thread: threading.Thread | None = None

    # ---- lifecycle

    def start(self) -> ScriptedLLMServer:
        if self._httpd is not None:
            return self
        httpd = _Server((self._host, self._port), _Handler)
        httpd.owner = self
        self._httpd = httpd
        self._thread = threading.Thread(
            target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, name="scripted-llm", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        httpd, self._httpd = self._httpd, None
        self._release.set()
        if httpd is not None:
            httpd.shutdown()
            httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError("scripted LLM server is not started")
        return self._httpd.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://{self._host}:{self.port}/v1"

    # ---- scripting

    def script(self, *steps: Step) -> ScriptedLLMServer:
        """Append steps; each chat completion request consumes one, in order."""
        with self._lock:
            self._queue.extend(steps)
        return self

    def reset(self) -> None:
        """Forget steps, requests and responder; release hanging handlers."""
        with self._lock:
            self._queue.clear()
            self._requests.clear()
            self._transcriptions.clear()
            self._transcription_requests.clear()
            self._speeches.clear()
            self._speech_requests.clear()
            self.responder = None
            self.transcript = None
            self.transcription_uploads.clear()
            self._release.set()
            self._release = threading.Event()

    def script_transcription(self, *steps: TranscriptionStep) -> ScriptedLLMServer:
        """Append steps for ``/audio/transcriptions``; each request consumes one, in order."""
        with self._lock:
            self._transcriptions.extend(steps)
        return self

    @property
    def transcription_requests(self) -> list[dict[str, Any]]:
        """The multipart forms received by /audio/transcriptions, in arrival order."""
        with self._lock:
            return list(self._transcription_requests)

    def _next_transcription(
        self, form: dict[str, Any], raw: bytes = b""
    ) -> tuple[TranscriptionStep | None, threading.Event]:
        """The next scripted step; with none left, ``transcript`` (when set) answers every request."""
        with self._lock:
            self._transcription_requests.append(form)
            self.transcription_uploads.append(raw)
            if self._transcriptions:
                return self._transcriptions.popleft(), self._release
            return (Transcription(self.transcript) if self.transcript is not None else None), self._release

    def script_speech(self, *steps: Speech | HTTPError) -> ScriptedLLMServer:
        """Append steps for ``/audio/speech``; each request consumes one, in order."""
        with self._lock:
            self._speeches.extend(steps)
        return self

    @property
    def speech_requests(self) -> list[dict[str, Any]]:
        with self._lock:
            return list(self._speech_requests)

    def _next_speech(self, body: dict[str, Any]) -> tuple[Speech | HTTPError | None, threading.Event]:
        with self._lock:
            self._speech_requests.append(body)
            return (self._speeches.popleft() if self._speeches else None), self._release

    @property
    def requests(self) -> list[dict[str, Any]]:
        """Snapshot of the JSON bodies received by /chat/completions, in arrival order."""
        with self._lock:
            return list(self._requests)

    @property
    def last_request(self) -> dict[str, Any]:
        with self._lock:
            if not self._requests:
                raise AssertionError("scripted LLM: no request received")
            return self._requests[-1]

    @property
    def connections(self) -> int:
        """TCP connections accepted since the server started (never reset: compare before/after)."""
        with self._lock:
            return self._connections

    def _count_connection(self) -> None:
        with self._lock:
            self._connections += 1

    @property
    def pending(self) -> int:
        """Steps scripted but not consumed yet."""
        with self._lock:
            return len(self._queue)

    def _next_step(self, body: dict[str, Any]) -> tuple[Step | None, threading.Event]:
        with self._lock:
            self._requests.append(body)
            release = self._release
            if self._queue:
                return self._queue.popleft(), release
            responder = self.responder
        if responder is None:
            return None, release
        try:
            return responder(body), release
        except Exception as exc:  # noqa: BLE001 - surface responder bugs as an obvious HTTP 500
            return HTTPError(500, f"scripted LLM: responder failed: {exc!r}"), release
