"""Per-session leases with fencing tokens: two workers never run one session's turns at once.

Distributed mode only (the in-process runner orders a session's turns with a FIFO). A worker
claims a session with one conditional UPDATE (free, or its holder's heartbeat is older than the
lease), which bumps the session's ``fence``. While it runs turns it renews the heartbeat; a
renewal that finds another fence means the lease was taken over and the turn must stop.

Completions check the fence in their own transaction (``check_fence``): the row lock taken by
that check serialises them with a takeover, so a worker that lost its lease can never store an
answer after the session was handed to another worker. The fence of the running drain is held in
a context variable, set by the runner, so turns need no extra argument.
"""

from __future__ import annotations

import contextvars
import logging
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Iterator, NamedTuple

from sqlalchemy import and_, bindparam, case, or_, select, update
from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session as DbSession
from sqlalchemy.orm import sessionmaker

from mojodex_core.db import factory_engine, guarded_statements, transaction
from mojodex_core.db.models import Message, SessionRunner

log = logging.getLogger("mojodex.claims")

# The messages a session's runner answers: user messages, and the system messages that drive order
# conversations (their global events) and workflows (a step to run).
ORDER_EVENT_NAME = "order_event"
WORKFLOW_RUN_EVENT_NAME = "workflow_run"
RUNNER_SYSTEM_EVENTS = (ORDER_EVENT_NAME, WORKFLOW_RUN_EVENT_NAME)


def answered_by_runner():  # noqa: ANN201
    """The SQL condition of a message the runner answers (a user message or a driving system one)."""
    return or_(Message.sender == "user", Message.event_name.in_(RUNNER_SYSTEM_EVENTS))


_message = Message.__table__
_runner = SessionRunner.__table__
_STAMP = _runner.c.heartbeat_at.type

# The drain's statements, built once (Core on the tables, bound parameters): a drain runs several
# per turn, and building, cache-keying and ORM-compiling each at every call cost more CPU than the
# round trips themselves.
_FENCE_FOR_UPDATE = select(_runner.c.fence).where(_runner.c.session_id == bindparam("b_session")).with_for_update()
_CLAIM = (
    update(_runner)
    .where(
        _runner.c.session_id == bindparam("b_session"),
        or_(_runner.c.owner.is_(None), _runner.c.heartbeat_at < bindparam("b_cutoff", type_=_STAMP)),
    )
    .values(owner=bindparam("b_owner"), fence=_runner.c.fence + 1, heartbeat_at=bindparam("b_now", type_=_STAMP))
    .returning(_runner.c.fence)
)
_EXISTS = select(_runner.c.session_id).where(_runner.c.session_id == bindparam("b_session"))
_RENEW = (
    update(_runner)
    .where(_runner.c.session_id == bindparam("b_session"), _runner.c.fence == bindparam("b_fence"))
    .values(heartbeat_at=bindparam("b_now", type_=_STAMP))
)
_RELEASE = (
    update(_runner)
    .where(_runner.c.session_id == bindparam("b_session"), _runner.c.fence == bindparam("b_fence"))
    .values(owner=None)
)
_PENDING_FOR_RUNNER = and_(
    # answered_by_runner() with one equality per event name: an IN list is an expanding
    # parameter, re-rendered into the SQL at every execution.
    or_(_message.c.sender == "user", *(_message.c.event_name == name for name in RUNNER_SYSTEM_EVENTS)),
    _message.c.status == "pending",
)
# An audio message not transcribed yet (mojodex_core.audio.turn.awaits_transcription), for its job.
_AUDIO = and_(_message.c.sender == "user", _message.c.text == "").label("audio")
_NEXT_PENDING = (
    select(_message.c.message_pk, _message.c.event_name, _AUDIO, _message.c.answer_message_fk)
    .where(_message.c.session_id == bindparam("b_session"), _PENDING_FOR_RUNNER)
    .order_by(_message.c.message_pk)
    .limit(1)
)
# A message left processing first, then the oldest pending one: the first look in one read.
_FIRST_LOOK = (
    select(_message.c.message_pk, _message.c.status, _message.c.event_name, _AUDIO, _message.c.answer_message_fk)
    .where(
        _message.c.session_id == bindparam("b_session"),
        or_(_message.c.status == "processing", _PENDING_FOR_RUNNER),
    )
    .order_by(case((_message.c.status == "processing", 0), else_=1), _message.c.message_pk)
    .limit(1)
)
_PROCESSING = (
    select(_message.c.message_pk)
    .where(_message.c.session_id == bindparam("b_session"), _message.c.status == "processing")
    .limit(1)
)


class Superseded(Exception):
    """This worker's lease on the session was taken over: its result must not be stored."""


@dataclass(frozen=True)
class Claim:
    session_id: str
    fence: int
    owner: str


_current: contextvars.ContextVar[Claim | None] = contextvars.ContextVar("mojodex_claim", default=None)


def now() -> datetime:
    return datetime.now(UTC)


@contextmanager
def holding(claim: Claim) -> Iterator[None]:
    """Marks the code inside as running under ``claim`` (completions then check its fence)."""
    token = _current.set(claim)
    try:
        yield
    finally:
        _current.reset(token)


def current_claim() -> Claim | None:
    return _current.get()


def check_fence(db: DbSession | Connection, session_id: str) -> None:
    """Raises Superseded when the running drain's lease on ``session_id`` is no longer current.

    Locks the lease row until the caller's transaction ends (Postgres), so a takeover waits for
    a completion in progress and a completion never lands after a takeover. No-op in-process.
    """
    claim = _current.get()
    if claim is None or claim.session_id != session_id:
        return
    fence = db.execute(_FENCE_FOR_UPDATE, {"b_session": session_id}).scalar()
    if fence != claim.fence:
        raise Superseded(f"session {session_id}: lease fence {claim.fence} superseded by {fence}")


def claim_session(factory: sessionmaker[DbSession], session_id: str, owner: str, lease_s: float) -> Claim | None:
    """Takes the session if it is free or its holder stopped heart-beating; None if it is held.

    ``claim_and_look``'s claim (the drain's), without the look's answer. The conditional UPDATE
    comes first: a session is claimed once per drain, its lease row is created only at its first
    one."""
    return claim_and_look(factory, session_id, owner, lease_s, orphans=False)[0]


class Waiting(NamedTuple):
    """A message waiting for the runner, and its event_name (which handler answers it: the
    drain's job carries it, so the handler need not read it)."""

    message_pk: int
    event_name: str | None
    audio: bool = False  # an audio message not transcribed yet (TurnJob.audio)
    # The answer or error that closed its last turn (answer_message_fk): None until one did. A failed
    # message sent again keeps it, so a turn that failed the message since is told from one that left
    # it pending (the drain).
    closed_by: int | None = None


@dataclass(frozen=True)
class Look:
    """What a claim found, read right after it: a message a failed holder left processing (looked
    for only when asked) and, when there is none, the oldest pending message."""

    orphaned: int | None
    pending: Waiting | None


def claim_and_look(
    factory: sessionmaker[DbSession], session_id: str, owner: str, lease_s: float, *, orphans: bool = True
) -> tuple[Claim | None, Look | None]:
    """claim_session, and when the conditional UPDATE takes the session, the drain's first look:
    one statement right after the claim (on Postgres each commits itself: the claim is one
    guarded UPDATE, and the look reads under the lease just taken). The Look is None when the
    claim took the slow path (the session's first claim): the caller looks itself. A look that
    fails releases the claim (committed by then on Postgres) before the error goes on: the lease
    would otherwise stay held, with no heartbeat, until it lapses."""
    claim = None
    try:
        with guarded_statements(factory) as db:
            fence = _claim(db, session_id, owner, lease_s)
            if fence is not None:
                claim = Claim(session_id, fence, owner)
                return claim, first_look(db, session_id, orphans=orphans)
    except BaseException:
        # After the connection is back. Postgres: the claim committed by itself, release it.
        # SQLite: the transaction rolled it back, and its fence may already be another claim's.
        if claim is not None and factory_engine(factory).dialect.name != "sqlite":
            _release_after_failure(factory, claim)
        raise
    return _first_claim(factory, session_id, owner, lease_s), None


def _release_after_failure(factory: sessionmaker[DbSession], claim: Claim) -> None:
    try:
        release(factory, claim)
    except Exception:  # the lease lapses by itself; the sweep then re-runs what is left
        log.exception("session %s: releasing the lease after a failed look failed", claim.session_id)


def first_look(db: DbSession | Connection, session_id: str, *, orphans: bool) -> Look:
    """What a new holder finds: with ``orphans``, a message left ``processing`` by a failed holder
    (oldest first) and otherwise the oldest pending one, in one read; else the oldest pending."""
    if not orphans:
        return Look(None, next_pending(db, session_id))
    row = db.execute(_FIRST_LOOK, {"b_session": session_id}).first()
    if row is None:
        return Look(None, None)
    if row.status == "processing":
        return Look(row.message_pk, None)
    return Look(None, Waiting(row.message_pk, row.event_name, bool(row.audio), row.answer_message_fk))


def processing_message(db: DbSession | Connection, session_id: str) -> int | None:
    """A message of the session being answered (``processing``), if any."""
    return db.execute(_PROCESSING, {"b_session": session_id}).scalar()


def _claim(db: DbSession | Connection, session_id: str, owner: str, lease_s: float) -> int | None:
    """The conditional UPDATE: the new fence when the lease was free or lapsed, else None."""
    stamp = now()
    return db.execute(_CLAIM, {
        "b_session": session_id, "b_owner": owner, "b_now": stamp, "b_cutoff": stamp - timedelta(seconds=lease_s),
    }).scalar()


def _first_claim(factory: sessionmaker[DbSession], session_id: str, owner: str, lease_s: float) -> Claim | None:
    """After a conditional UPDATE that took nothing: None when the session's lease row exists
    (held), else the row created (the session's first claim), competing with another worker
    creating it at the same time."""
    with factory() as db:
        if db.execute(_EXISTS, {"b_session": session_id}).scalar() is not None:
            return None  # held
    try:
        with transaction(factory) as db:
            db.add(SessionRunner(session_id=session_id, owner=owner, fence=1, heartbeat_at=now()))
        return Claim(session_id, 1, owner)
    except IntegrityError:
        pass  # another worker created it first: compete for it
    with transaction(factory) as db:
        fence = _claim(db, session_id, owner, lease_s)
    return Claim(session_id, fence, owner) if fence is not None else None


def renew(factory: sessionmaker[DbSession], claim: Claim) -> bool:
    """Renews the heartbeat; False when the lease was taken over (the turn must stop)."""
    with transaction(factory) as db:
        result = db.execute(_RENEW, {"b_session": claim.session_id, "b_fence": claim.fence, "b_now": now()})
        return result.rowcount == 1


def release(factory: sessionmaker[DbSession], claim: Claim) -> None:
    with transaction(factory) as db:
        db.execute(_RELEASE, {"b_session": claim.session_id, "b_fence": claim.fence})


def release_and_look(factory: sessionmaker[DbSession], claim: Claim) -> bool:
    """Releases the lease, then tells whether a message still waits.

    On Postgres the release commits before the look (``guarded_statements``): a drain whose claim
    found the session held did so before that commit, so the message it came for was committed
    before it and the look sees it; a drain claiming after the commit takes the session. A look
    inside the release's transaction could miss a message committed after its snapshot but before
    the commit, whose drain found the session still held (an UPDATE skips a row whose new version
    is not committed): both gave up, and the message waited for the sweep. On SQLite the write
    lock held from the release to the commit makes that drain wait for it."""
    with guarded_statements(factory) as db:
        db.execute(_RELEASE, {"b_session": claim.session_id, "b_fence": claim.fence})
        return next_pending(db, claim.session_id) is not None


def next_pending(db: DbSession | Connection, session_id: str) -> Waiting | None:
    """The session's oldest message waiting for an answer (answered in the order accepted)."""
    row = db.execute(_NEXT_PENDING, {"b_session": session_id}).first()
    return Waiting(row.message_pk, row.event_name, bool(row.audio), row.answer_message_fk) if row is not None else None


def stalled_sessions(db: DbSession, lease_s: float) -> list[tuple[str, int]]:
    """Sessions whose holder stopped heart-beating for longer than the lease: (session_id, fence)."""
    rows = db.execute(
        select(SessionRunner.session_id, SessionRunner.fence).where(
            SessionRunner.owner.is_not(None),
            SessionRunner.heartbeat_at < now() - timedelta(seconds=lease_s),
        )
    ).all()
    return [(r.session_id, r.fence) for r in rows]


def take_over(db: DbSession, session_id: str, fence: int, lease_s: float) -> bool:
    """Frees a stalled lease in the caller's transaction, bumping the fence so its holder's
    completion is refused. False if the holder renewed meanwhile or someone else took it."""
    result = db.execute(
        update(SessionRunner)
        .where(
            SessionRunner.session_id == session_id,
            SessionRunner.fence == fence,
            SessionRunner.heartbeat_at < now() - timedelta(seconds=lease_s),
        )
        .values(owner=None, fence=SessionRunner.fence + 1)
    )
    return result.rowcount == 1


def sessions_waiting(db: DbSession, older_than_s: float) -> list[str]:
    """Sessions with a message pending for longer than ``older_than_s`` and no live holder:
    their drain task was lost (e.g. the broker restarted) and must be sent again."""
    cutoff = now() - timedelta(seconds=older_than_s)
    held = select(SessionRunner.session_id).where(SessionRunner.owner.is_not(None))
    rows = db.scalars(
        select(Message.session_id)
        .where(
            answered_by_runner(),
            Message.status == "pending",
            Message.created_at < cutoff,
            Message.session_id.not_in(held),
        )
        .distinct()
    )
    return list(rows)
