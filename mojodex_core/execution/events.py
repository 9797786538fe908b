"""The per-session event stream: sequence numbers, durable log, live transport, replay.

Final events (mojo_message, draft_message, error...) are written to the session_event
table before they are sent, so a client reconnecting with its last seq gets everything it
missed. Token deltas are too many to write to the database; they are kept in a bounded
in-memory buffer per session instead, so a reconnect in the middle of a stream still
gets the tokens it missed. A per-session lock makes "join the room, then replay" atomic
with respect to publishing, which is what makes each event arrive exactly once.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from contextlib import AbstractContextManager, contextmanager
from typing import Any, Callable, Iterator, Protocol

from sqlalchemy import func, insert, literal, select
from sqlalchemy.engine import Connection
from sqlalchemy.orm import Session as DbSession
from sqlalchemy.orm import sessionmaker

from mojodex_core.db import transaction
from mojodex_core.db.models import MESSAGE_UNANSWERED, Message, SessionEvent

log = logging.getLogger("mojodex.events")

# Events after which a turn streams tokens; no turn streams after the others.
TURN_OPENING_EVENTS = ("user_message_reception", "user_task_execution_start")
# Sent before a turn resumed after a restart: clients drop the partial answer of that message.
RETRYING_EVENT = "mojo_message_retrying"
# More token events than one turn can send (180 s at one event per 30 ms is 6,000).
TOKEN_SEQ_HEADROOM = 10_000

Transport = Callable[[str, str, dict[str, Any]], None]  # (session_id, event_name, payload)



def durable_events_after(db: DbSession, session_id: str, last_seq: int) -> list[tuple[int, str, dict[str, Any]]]:
    """The session's stored (final) events after ``last_seq``, in order: every replay starts here."""
    rows = db.execute(
        select(SessionEvent.seq, SessionEvent.event_name, SessionEvent.payload)
        .where(SessionEvent.session_id == session_id, SessionEvent.seq > last_seq)
        .order_by(SessionEvent.seq)
    ).all()
    return [(r.seq, r.event_name, r.payload) for r in rows]

class EventPublisher(Protocol):
    def publishing(self, session_id: str) -> AbstractContextManager[Publication]: ...

    def publish(self, session_id: str, event_name: str, payload: dict[str, Any], *, durable: bool = True) -> int: ...


_INSERT_EVENT = insert(SessionEvent.__table__)


def announcing(stored, event_name: str, *, session, seq, payload, created_at):  # noqa: ANN001, ANN201
    """Postgres: the INSERT, as a data-modifying CTE, of the event that announces the message a
    CTE of the same statement stores (``stored``, returning its ``message_pk``): one row if it
    stored one, none otherwise, its ``payload`` (JSONB) completed with that ``message_pk`` in SQL.
    ``session``, ``seq``, ``payload`` and ``created_at`` are the caller's binds. The caller sends
    the event once the statement committed (``Publication.written``)."""
    event = SessionEvent.__table__
    completed = payload.op("||")(func.jsonb_build_object(literal("message_pk"), stored.c.message_pk))
    return insert(event).from_select(
        ["session_id", "seq", "event_name", "payload", "created_at"],
        select(session, seq, literal(event_name), completed, created_at).select_from(stored),
    ).cte("announced")


class Publication:
    """Events written with the rows they announce (in the caller's transaction, or in its one
    statement), sent once they are committed."""

    def __init__(self, session_id: str, last_seq: int) -> None:
        self.session_id = session_id
        self.last_seq = last_seq
        self.events: list[tuple[str, dict[str, Any]]] = []

    def next_seq(self) -> int:
        """Allocates the seq of the next event, for a caller that stores it (e.g. on its message row)
        before it adds the event: pass it to ``add`` as ``seq``."""
        self.last_seq += 1
        return self.last_seq

    def add(
        self, db: DbSession | Connection, event_name: str, payload: dict[str, Any], *, seq: int | None = None
    ) -> int:
        """Writes the event in the caller's transaction (an ORM session or a Connection); ``seq`` is
        one just taken with ``next_seq``."""
        if seq is None:
            seq = self.next_seq()
        self._check_last(seq)
        payload = {**payload, "seq": seq}
        # A Core INSERT on the table, at once: no ORM unit of work (and no autoflush) per event.
        db.execute(_INSERT_EVENT, {
            "session_id": self.session_id, "seq": seq, "event_name": event_name, "payload": payload,
        })
        self.events.append((event_name, payload))
        return seq

    def written(self, event_name: str, payload: dict[str, Any]) -> None:
        """An event the caller stored itself, in the statement that stores the row it announces
        (intake on Postgres), with the seq last taken by ``next_seq`` in its payload: it is sent
        once the block ends, like those written by ``add``."""
        self._check_last(payload.get("seq"))
        self.events.append((event_name, payload))

    def _check_last(self, seq: object) -> None:
        if seq != self.last_seq:
            raise ValueError(f"seq {seq} is not the last allocated ({self.last_seq}): events would be out of order")


class _SessionStream:
    __slots__ = ("lock", "last_seq", "tokens", "touched")

    def __init__(self, last_seq: int, buffer_size: int) -> None:
        self.lock = threading.RLock()
        self.last_seq = last_seq
        self.tokens: deque[tuple[int, str, dict[str, Any]]] = deque(maxlen=buffer_size)
        self.touched = time.monotonic()


def resume_seq(factory: sessionmaker[DbSession], session_id: str) -> int:
    """Where a session's seqs continue when this process first sees it.

    Token events are not stored. If the last stored event opened a turn, that turn may
    have streamed tokens before the process died, with seqs above the stored maximum
    that a client may have seen: jump past them so every new event is new to it.
    """
    with factory() as db:
        last = db.execute(
            select(SessionEvent.seq, SessionEvent.event_name)
            .where(SessionEvent.session_id == session_id)
            .order_by(SessionEvent.seq.desc())
            .limit(1)
        ).first()
        unanswered = db.scalar(
            select(Message.message_pk)
            .where(
                Message.session_id == session_id,
                Message.sender == "user",
                Message.status.in_(MESSAGE_UNANSWERED),
            )
            .limit(1)
        )
    if last is None:
        return 0
    if last.event_name in TURN_OPENING_EVENTS or unanswered is not None:
        return last.seq + TOKEN_SEQ_HEADROOM
    return last.seq


class SessionEventLog:
    def __init__(
        self,
        session_factory: sessionmaker[DbSession],
        transport: Transport | None = None,
        *,
        token_buffer_size: int = 5000,
        idle_forget_s: float = 900.0,
    ) -> None:
        self._factory = session_factory
        self._transport = transport
        self._buffer_size = token_buffer_size
        self._idle_forget_s = idle_forget_s
        self._streams: dict[str, _SessionStream] = {}
        self._streams_lock = threading.Lock()

    def set_transport(self, transport: Transport | None) -> None:
        self._transport = transport

    def _stream(self, session_id: str) -> _SessionStream:
        with self._streams_lock:
            stream = self._streams.get(session_id)
            if stream is None:
                self._forget_idle()
                stream = self._streams[session_id] = _SessionStream(self._resume_seq(session_id), self._buffer_size)
            stream.touched = time.monotonic()
            return stream

    def _resume_seq(self, session_id: str) -> int:
        return resume_seq(self._factory, session_id)

    def _forget_idle(self) -> None:
        now = time.monotonic()
        for session_id in [s for s, st in self._streams.items() if now - st.touched > self._idle_forget_s]:
            stream = self._streams[session_id]
            if stream.lock.acquire(blocking=False):
                try:
                    del self._streams[session_id]
                finally:
                    stream.lock.release()

    @contextmanager
    def session_lock(self, session_id: str) -> Iterator[None]:
        """Serialises a caller with everything published to this session (re-entrant)."""
        stream = self._stream(session_id)
        with stream.lock:
            yield

    @contextmanager
    def publishing(self, session_id: str) -> Iterator[Publication]:
        """Holds the session's stream while the caller writes events in its own transaction.

        The caller adds events with `publication.add(db, ...)` (or `written` for one its own
        statement stored) and commits inside the block;
        the events are sent only once the block ends without error, in seq order.
        """
        stream = self._stream(session_id)
        with stream.lock:
            publication = Publication(session_id, stream.last_seq)
            yield publication
            stream.last_seq = publication.last_seq
            for name, payload in publication.events:
                self._send(session_id, name, payload)

    def publish(self, session_id: str, event_name: str, payload: dict[str, Any], *, durable: bool = True) -> int:
        if durable:
            with self.publishing(session_id) as publication, transaction(self._factory) as db:
                return publication.add(db, event_name, payload)
        stream = self._stream(session_id)
        with stream.lock:
            seq = stream.last_seq = stream.last_seq + 1
            payload = {**payload, "seq": seq}
            stream.tokens.append((seq, event_name, payload))
            self._send(session_id, event_name, payload)
            return seq

    def _send(self, session_id: str, event_name: str, payload: dict[str, Any]) -> None:
        if self._transport is None:
            return
        try:
            self._transport(session_id, event_name, payload)
        except Exception:  # a dead socket must not fail the turn; the log has the event
            log.exception("transport failed for %s %s seq=%s", session_id, event_name, payload.get("seq"))

    def events_after(self, session_id: str, last_seq: int) -> list[tuple[int, str, dict[str, Any]]]:
        stream = self._stream(session_id)
        with stream.lock:
            return self._events_after_locked(session_id, stream, last_seq)

    def _events_after_locked(
        self, session_id: str, stream: _SessionStream, last_seq: int
    ) -> list[tuple[int, str, dict[str, Any]]]:
        with self._factory() as db:
            events = durable_events_after(db, session_id, last_seq)
        events += [e for e in stream.tokens if e[0] > last_seq]
        events.sort(key=lambda e: e[0])
        return events

    def join_and_replay(
        self,
        session_id: str,
        last_seq: int,
        join: Callable[[], None],
        send: Callable[[str, dict[str, Any]], None],
        sid: str | None = None,
    ) -> int:
        """Joins the live stream and sends what came after last_seq, with no gap or duplicate.

        ``sid`` (the socket) matters only to the distributed log; here one lock orders everything."""
        stream = self._stream(session_id)
        with stream.lock:
            join()
            events = self._events_after_locked(session_id, stream, last_seq)
            for _seq, name, payload in events:
                send(name, payload)
            return len(events)
