"""The clients of the bench: a user, an execution and a joined Socket.IO client per session,
and one timed turn (PUT /user_message, then the streamed events up to the final message).
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from requests.adapters import HTTPAdapter
from urllib3.util.retry import Retry

from bench._hosts import DRAFT_PREFIX
from mojodex_core.execution.events import RETRYING_EVENT
from tests.support.live import Client, SocketRecorder

# --------------------------------------------------------------------------- clients


@dataclass
class TimedRecorder(SocketRecorder):
    """SocketRecorder that also stamps each event with its arrival time (perf_counter)."""

    times: list[float] = field(default_factory=list)

    def _record(self, event: str, data: Any = None) -> None:
        now = time.perf_counter()
        with self._cond:
            self.events.append((event, data))
            self.times.append(now)
            self._cond.notify_all()


@dataclass
class BenchSession:
    index: int
    client: Client
    socket: TimedRecorder
    session_id: str
    pk: int
    sent: int = 0


@dataclass
class TurnResult:
    kind: str  # "question" | "draft"
    text: str
    t_put: float
    t_put_done: float = 0.0
    t_first: float | None = None
    t_final: float | None = None
    token_events: int = 0
    delta_chars: int = 0
    error: str | None = None
    content_ok: bool | None = None
    mismatch: str | None = None  # what differed, when content_ok is False
    retried: bool = False  # the platform re-ran the turn (mojo_message_retrying)

    @property
    def ok(self) -> bool:
        return self.error is None and self.t_final is not None

    def ms(self, until: float | None) -> float | None:
        return None if until is None else (until - self.t_put) * 1000


def new_user(factory, name: str, tasks: list[str]) -> tuple[str, str]:  # noqa: ANN001
    """(token, user_id) of a new user granted these tasks, made in the database (as
    LiveServer.new_user does through the live platform)."""
    from mojodex_core.db import transaction
    from mojodex_core.users import create_user, grant, issue_token

    with transaction(factory) as db:
        user = create_user(db, name=name, email=f"bench{uuid.uuid4().hex[:12]}@example.com")
        token = issue_token(db, user)
        grant(db, user, tasks)
        return token, user.user_id


def new_session(index: int, factory, base_url: str) -> BenchSession:
    """A user of its own, an execution, a joined socket."""
    token, user_id = new_user(factory, f"Bench {index}", ["test_email"])
    client = Client(base_url, token, user_id)
    # A kept-alive connection the server closes as the client reuses it is reset (gunicorn keeps
    # idle connections 2 s): retry such a PUT once, as browsers do; message_id makes it idempotent.
    retry = Retry(total=1, connect=1, read=1, status=0, allowed_methods=None, raise_on_status=False)
    client.http.mount("http://", HTTPAdapter(max_retries=retry))
    execution = client.new_execution()
    socket = TimedRecorder(base_url, token)
    joined = socket.start_session(execution["session_id"])
    if not isinstance(joined, dict) or joined.get("session_id") != execution["session_id"]:
        raise RuntimeError(f"start_session failed: {joined!r}")
    return BenchSession(index, client, socket, execution["session_id"], execution["user_task_execution_pk"])


def run_turn(
    session: BenchSession, kind: str, expected: str, timeout_s: float, scheduled: float | None = None
) -> TurnResult:
    """One turn; latencies count from ``scheduled`` when given (an open-loop arrival time), else from the PUT."""
    session.sent += 1
    prefix = DRAFT_PREFIX if kind == "draft" else "answer: "
    text = f"{prefix}session {session.index} turn {session.sent} {uuid.uuid4().hex[:8]}"
    final_name, token_name = ("draft_message", "draft_token") if kind == "draft" else ("mojo_message", "mojo_token")
    socket = session.socket
    with socket._cond:
        start = len(socket.events)
    result = TurnResult(kind, text, scheduled if scheduled is not None else time.perf_counter())
    try:
        response = session.client.call(
            "PUT",
            "/user_message",
            json={
                "session_id": session.session_id,
                "user_task_execution_pk": session.pk,
                "text": text,
                "message_id": uuid.uuid4().hex,
            },
        )
    except Exception as exc:  # noqa: BLE001
        result.error = f"PUT failed: {exc!r}"
        return result
    result.t_put_done = time.perf_counter()
    if response.status_code != 200:
        result.error = f"PUT /user_message: {response.status_code} {response.text[:200]}"
        return result
    message_pk = response.json()["message_pk"]
    # python-engineio's client runs each message's handler on a thread of its own, so events can
    # be recorded out of order under load: the turn is complete once its final event and every
    # seq from its user_message_reception to that final event have been recorded.
    span: dict[str, int] = {}

    def complete(events: list[tuple[str, Any]]) -> bool:
        seqs = set()
        for name, data in events[start:]:
            if not isinstance(data, dict):
                continue
            seqs.add(data.get("seq"))
            if name == "user_message_reception" and data.get("message_pk") == message_pk:
                span["first"] = data["seq"]
            elif name in (final_name, "error") and data.get("user_message_pk") == message_pk:
                span["last"] = data["seq"]
        if "first" not in span or "last" not in span:
            return False
        return all(seq in seqs for seq in range(span["first"], span["last"] + 1))

    try:
        socket.wait_for(complete, timeout=timeout_s)
    except AssertionError:
        result.error = f"no complete {final_name} turn within {timeout_s:.0f} s"
        return result
    with socket._cond:
        recorded = list(zip(socket.events[start:], socket.times[start:], strict=False))
    turn = sorted(
        ((data["seq"], name, data, t) for (name, data), t in recorded
         if isinstance(data, dict) and span["first"] < (data.get("seq") or 0) <= span["last"]),
        key=lambda e: e[0],
    )
    _seq, final_event, final, result.t_final = turn[-1]
    if final_event == "error":
        result.error = f"error event: {final.get('error')}"
        return result
    deltas: list[str] = []
    token_seqs: list[int] = []
    for seq, name, data, t in turn:
        if name == RETRYING_EVENT and data.get("message_pk") == message_pk:
            deltas, result.retried = [], True  # the turn runs again: clients drop its partial text
        elif name == token_name:
            if result.t_first is None or t < result.t_first:
                result.t_first = t  # the first token event to arrive, whatever its handler's order
            result.token_events += 1
            result.delta_chars += len(data.get("delta") or "")
            token_seqs.append(seq)
            if kind == "question" or data.get("part") == "draft":
                deltas.append(data.get("delta") or "")
    streamed = "".join(deltas)
    stored = final.get("produced_text") if kind == "draft" else final.get("text")
    result.content_ok = streamed == stored == expected
    if not result.content_ok:
        result.mismatch = (f"streamed {streamed!r} stored {stored!r} expected {expected!r} "
                           f"token seqs {token_seqs} final seq {final.get('seq')}")
    return result
