"""A stand-in for the local model server, run as a child process by the supervision tests.

`python -m tests.support.fake_model_server --port N [--crash-on-completion | --crash-mid-answer]
[--exit-at-start CODE]`

It speaks just enough of the OpenAI API (GET /v1/models, POST /v1/chat/completions, plain and
streamed) to be the platform's LLM, and can die the ways a broken llama.cpp build does: at
start, or with SIGSEGV on its first completion after listing its models.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

REPLY = "Hello from the fake model."


def _segfault() -> None:
    """Die of SIGSEGV here, before another line of the handler runs. os.kill(getpid()) left the
    kernel free to deliver the signal to another thread, and on a loaded machine this handler
    went on to answer 200 before the process died (the suite's flaky supervision test)."""
    signal.pthread_kill(threading.get_ident(), signal.SIGSEGV)
    time.sleep(60)  # not reached: a signal sent to this thread is delivered before the call returns


def make_handler(crash_on_completion: bool, crash_mid_answer: bool = False) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002
            print("fake model:", format % args, flush=True)

        def _json(self, payload: dict) -> None:
            body = json.dumps(payload).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:  # noqa: N802
            if self.path.rstrip("/") == "/v1/models":
                self._json({"object": "list", "data": [{"id": "smollm2-135m", "object": "model"}]})
            else:
                self.send_error(404)

        def do_POST(self) -> None:  # noqa: N802
            request = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
            if crash_mid_answer:
                print("fake model: crashing in the middle of an answer", flush=True)
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", "281")
                self.end_headers()
                self.wfile.flush()
                _segfault()
            if crash_on_completion:
                print("fake model: crashing on a completion, as a miscompiled llama.cpp does", flush=True)
                _segfault()
            if not request.get("stream"):
                self._json({
                    "id": "c1", "object": "chat.completion", "created": 0, "model": "smollm2-135m",
                    "choices": [{"index": 0, "message": {"role": "assistant", "content": REPLY},
                                 "finish_reason": "stop"}],
                    "usage": {"prompt_tokens": 3, "completion_tokens": 5, "total_tokens": 8},
                })
                return
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Connection", "close")
            self.end_headers()
            for word in REPLY.split(" "):
                chunk = {"id": "c1", "object": "chat.completion.chunk", "created": 0, "model": "smollm2-135m",
                         "choices": [{"index": 0, "delta": {"content": word + " "}, "finish_reason": None}]}
                self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
            end = {"id": "c1", "object": "chat.completion.chunk", "created": 0, "model": "smollm2-135m",
                   "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
            self.wfile.write(f"data: {json.dumps(end)}\n\ndata: [DONE]\n\n".encode())
            self.wfile.flush()
            self.close_connection = True

    return Handler


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--crash-on-completion", action="store_true")
    parser.add_argument("--crash-mid-answer", action="store_true")
    parser.add_argument("--exit-at-start", type=int, default=None)
    args = parser.parse_args()
    print("fake model: loading", flush=True)
    if args.exit_at_start is not None:
        print("fake model: cannot load the model file", flush=True)
        sys.exit(args.exit_at_start)
    handler = make_handler(args.crash_on_completion, args.crash_mid_answer)
    server = ThreadingHTTPServer(("127.0.0.1", args.port), handler)
    print(f"fake model: listening on {args.port}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
