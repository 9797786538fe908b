"""The end of an instruct turn that answered: its outcome stored, then sent to the client.

``TurnCompletion`` is phase 3 of ``turn.InstructTurn`` (its base class): in one transaction,
the claim ``processing -> answered`` (``Superseded`` when another run answered), the execution
re-read under its row lock (``mojodex_core.db.EXECUTION_LOCK``), the session's language, the
answer inserted with its event's seq (a question, an approval request, or a draft with its
produced text version and the execution completed and named), the event, and the reasoning trace
the turn's calls collected; the trace of a turn that stored no answer goes in on its own
(``_write_trace``). Prebuilt Core statements: no ORM object on the turn's path.

Also here, as set-up and completion both use them: ``TurnContext``, what the set-up hands to the
rest of the turn, and ``TurnFailed``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import bindparam, insert, select, update
from sqlalchemy.engine import Connection, Row
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session as DbSession
from sqlalchemy.orm import sessionmaker

from mojodex_core.db import EXECUTION_LOCK, autocommit_connection, core_transaction, factory_engine
from mojodex_core.db.models import Message, Session, UserTaskExecution
from mojodex_core.execution.answer_statement import MAX_TRACE_ENTRIES, answer_binds, answer_statement, trace_written
from mojodex_core.execution.events import EventPublisher
from mojodex_core.execution.failures import EXECUTION_DELETED
from mojodex_core.execution.produced_text import append_draft_version
from mojodex_core.execution.reasoning import append_trace_entries, kept_entries, log_written, trace_params
from mojodex_core.execution.session_claims import Superseded, check_fence, current_claim
from mojodex_core.execution.tool_loop import TurnOutcome
from mojodex_core.execution.tool_requests import RecordedUse
from mojodex_core.execution.tool_runs import record_approval_request
from mojodex_core.tags import ParsedReply

log = logging.getLogger("mojodex.turn")

_message = Message.__table__
_execution = UserTaskExecution.__table__
_session = Session.__table__


class TurnFailed(Exception):
    """A turn that cannot produce an answer; the message is shown to the user."""


@dataclass
class TurnContext:
    """What the set-up (turn.InstructTurn._begin) hands to the LLM call and the completion."""

    session_id: str
    message_pk: int
    message_id: str | None
    user_task_execution_pk: int
    user_id: str
    llm_messages: list[dict[str, str]]
    output_text_type_fk: int | None
    output_text_type: str | None
    # Set when the turn cannot run (prompt failed, execution deleted): it fails visibly instead.
    setup_error: str | None = None
    started_now: bool = False
    # The task spec's tools ({name, usage_description, requires_approval, config}).
    tools: list[dict[str, Any]] = field(default_factory=list)
    # Set when this turn follows up a tool use the user approved or declined.
    resume_tool_execution_pk: int | None = None
    # The tool uses the message made already, in call order (tool_runs.recorded_uses).
    recorded_uses: list[RecordedUse] = field(default_factory=list)
    # The session's language when the turn began (a session's turns run one at a time).
    session_language: str | None = None
    # A draft completes the execution of an instruct task; a workflow's engine completes its own (its result
    # chat's draft only refines the result, and must not complete a workflow an edit has reopened meanwhile).
    completes_execution: bool = True
    # The reasoning trace entries of the turn's LLM calls, (entry, source), not written yet: they
    # go in with the answer, or on their own when the turn ends without one.
    trace: list[tuple[str, str]] = field(default_factory=list)


# The completion's writes, prebuilt: the claim answered once, the execution read under a row lock,
# the answer and its links.
_CLAIM_ANSWERED = (
    update(_message)
    .where(_message.c.message_pk == bindparam("b_pk"), _message.c.status == "processing")
    .values(status="answered")
)
_MESSAGE_STATUS = select(_message.c.status).where(_message.c.message_pk == bindparam("b_pk"))
# The execution's row lock (EXECUTION_LOCK: FOR NO KEY UPDATE), which every other writer of the
# row takes too, and rows that only name the execution (the spool's llm_call rows) do not wait for.
_EXECUTION_LOCKED = (
    select(_execution.c.status, _execution.c.title)
    .where(_execution.c.user_task_execution_pk == bindparam("b_pk"))
    .with_for_update(**EXECUTION_LOCK)
)
_SET_LANGUAGE = (
    update(_session)
    .where(_session.c.session_id == bindparam("b_session"))
    .values(language=bindparam("b_language", type_=_session.c.language.type))
)
_INSERT_ANSWER = insert(_message).returning(_message.c.message_pk)
_SET_ANSWER = (
    update(_message)
    .where(_message.c.message_pk == bindparam("b_pk"))
    .values(answer_message_fk=bindparam("b_answer", type_=_message.c.answer_message_fk.type))
)
_SET_DATA = (
    update(_message)
    .where(_message.c.message_pk == bindparam("b_pk"))
    .values(data=bindparam("b_data", type_=_message.c.data.type))
)


# A draft completes its execution (unless it is already) and names it (unless it has a title):
# decided on the row read under its lock (_EXECUTION_LOCKED), as the ORM code did.
_FINISH = (
    update(_execution)
    .where(_execution.c.user_task_execution_pk == bindparam("b_pk"))
    .values(status="completed", end_date=bindparam("b_now", type_=_execution.c.end_date.type))
)
_FINISH_NAMED = _FINISH.values(title=bindparam("b_title", type_=_execution.c.title.type))
_NAME = (
    update(_execution)
    .where(_execution.c.user_task_execution_pk == bindparam("b_pk"))
    .values(title=bindparam("b_title", type_=_execution.c.title.type))
)


def _now() -> datetime:
    return datetime.now(UTC)


def _not_answered(row: Row, message_pk: int, fence: int | None) -> Exception:
    """Why ``answer_statement`` stored nothing, as ``_complete``'s transaction would say it, its
    checks in the same order (the lease's fence, the claim, the execution). The message's status
    is the statement's snapshot's: one changed by a commit since reads "changed"."""
    if fence is not None and row.fence != fence:
        return Superseded(f"session lease fence {fence} superseded by {row.fence}")
    if row.message_status != "processing":
        return Superseded(f"message {message_pk} is {row.message_status or 'gone'}")
    if row.execution_status is None or row.execution_status == "deleted":
        return TurnFailed(EXECUTION_DELETED)
    return Superseded(f"message {message_pk} changed while its answer was stored")


class TurnCompletion:
    """Phase 3 of an instruct turn (module docstring), as a base class of ``InstructTurn``, which
    provides the session factory and the event publisher."""

    _factory: sessionmaker[DbSession]
    _events: EventPublisher

    # --- phase 3: store the outcome, then tell the client
    def _complete(self, context: TurnContext, outcome: TurnOutcome) -> None:
        if self._answer_in_one_statement(context, outcome):
            return
        reply = outcome.reply
        pk = context.user_task_execution_pk
        with self._events.publishing(context.session_id) as publication, core_transaction(self._factory) as db:
            check_fence(db, context.session_id)
            # The claim: answered once. Another run that answered the message (or a retry that reset
            # it) leaves it not "processing": idempotent completion then stores nothing.
            if db.execute(_CLAIM_ANSWERED, {"b_pk": context.message_pk}).rowcount != 1:
                status = db.execute(_MESSAGE_STATUS, {"b_pk": context.message_pk}).scalar()
                raise Superseded(f"message {context.message_pk} is {status or 'gone'}")
            # Write first, then read the status under a row lock: on SQLite the write takes the
            # database lock, on Postgres the row lock waits for a deletion in progress (an UPDATE of
            # the status) to commit, so a deletion can no longer slip in between this check and the
            # draft's "completed".
            execution = db.execute(_EXECUTION_LOCKED, {"b_pk": pk}).first()
            if execution is None or execution.status == "deleted":
                # Deleted while the reply was generated: storing a draft would mark it "completed"
                # and bring it back into the user's list.
                raise TurnFailed(EXECUTION_DELETED)
            if reply.language and reply.language[:8] != context.session_language:
                db.execute(_SET_LANGUAGE, {"b_session": context.session_id, "b_language": reply.language[:8]})
            data: dict[str, Any] | None = None  # the answer's data, when known only after its insert
            # The answer's row is inserted with the seq of its event, as intake does for user messages.
            seq = publication.next_seq()
            if outcome.approval is not None:
                text = reply.text.strip()
                tool_execution_pk = record_approval_request(
                    db, outcome.approval, user_task_execution_pk=pk, message_pk=context.message_pk,
                )
                asked = {"task_tool_execution_pk": tool_execution_pk, "tool_name": outcome.approval.name[:64]}
                event_name = "mojo_message"
                answer_pk = self._insert_answer(db, context, event_name, text, reply.text_with_tags, asked, seq)
                payload = {"text": text, "message_pk": answer_pk, **asked}
            elif reply.kind == "execution" and (reply.draft or reply.title):
                if not (reply.draft or "").strip():
                    # A version with no body is no result: the turn fails visibly and can be retried.
                    raise TurnFailed("The assistant returned an empty draft. Please retry.")
                event_name = "draft_message"
                answer_pk, payload, data = self._store_draft(db, context, execution, reply, seq)
            else:
                text = (reply.text or "").strip()
                if not text:
                    raise TurnFailed("The assistant returned an empty answer. Please retry.")
                event_name = "mojo_message"
                answer_pk = self._insert_answer(db, context, event_name, text, reply.text_with_tags, {}, seq)
                payload = {"text": text, "message_pk": answer_pk}
            db.execute(_SET_ANSWER, {"b_pk": context.message_pk, "b_answer": answer_pk})
            publication.add(db, event_name, {
                **payload,
                "session_id": context.session_id,
                "user_task_execution_pk": pk,
                "user_message_pk": context.message_pk,
            }, seq=seq)
            if data is not None:
                db.execute(_SET_DATA, {"b_pk": answer_pk, "b_data": data})
            # The decisions that led to this answer are part of the turn's outcome: same transaction.
            append_trace_entries(db, pk, context.trace)
        context.trace.clear()  # committed

    def _answer_in_one_statement(self, context: TurnContext, outcome: TurnOutcome) -> bool:
        """Postgres: a plain answer stored by ``answer_statement.answer_statement``, one round trip
        in autocommit instead of eight. False when the outcome needs ``_complete``'s transaction
        (SQLite, an approval request, a draft, an empty answer, a new session language, a longer
        trace) or when the statement hit a unique violation (rolled back whole: the transaction
        then stores the answer). Raises what the transaction would: ``Superseded``, ``TurnFailed``."""
        reply = outcome.reply
        text = (reply.text or "").strip()
        engine = factory_engine(self._factory)
        entries = kept_entries(context.trace)
        if (
            engine.dialect.name != "postgresql" or outcome.approval is not None or not text
            or (reply.kind == "execution" and (reply.draft or reply.title))
            or (reply.language and reply.language[:8] != context.session_language)
            or len(entries) > MAX_TRACE_ENTRIES
        ):
            return False
        claim = current_claim()
        fence = claim.fence if claim is not None and claim.session_id == context.session_id else None
        pk = context.user_task_execution_pk
        try:
            with self._events.publishing(context.session_id) as publication, autocommit_connection(engine) as db:
                seq = publication.next_seq()
                payload = {"text": text, "session_id": context.session_id, "user_task_execution_pk": pk,
                           "user_message_pk": context.message_pk, "seq": seq}
                now = _now()
                binds = answer_binds(
                    message_pk=context.message_pk, user_task_execution_pk=pk, session_id=context.session_id,
                    text=text, text_with_tags=reply.text_with_tags, seq=seq, created_at=now, payload=payload,
                    fence=fence,
                )
                if entries:
                    binds.update(trace_params(pk, entries, now))
                row = db.execute(answer_statement(fence is not None, len(entries)), binds).one()
                if row.answer_pk is None:
                    raise _not_answered(row, context.message_pk, fence)
                publication.written("mojo_message", {**payload, "message_pk": row.answer_pk})
        except IntegrityError as exc:
            log.warning("answer to message_pk=%s: its one statement was refused (%s), storing it in a transaction",
                        context.message_pk, type(exc.orig).__name__)
            return False
        log_written(pk, trace_written(row))
        context.trace.clear()  # committed
        return True

    @staticmethod
    def _insert_answer(
        db: Connection, context: TurnContext, event_name: str, text: str, raw: str, data: dict[str, Any], seq: int
    ) -> int:
        return db.execute(_INSERT_ANSWER, {
            "session_id": context.session_id, "user_task_execution_fk": context.user_task_execution_pk,
            "sender": "assistant", "event_name": event_name, "text": text, "text_with_tags": raw,
            "status": "final", "data": data, "seq": seq, "created_at": _now(),
        }).scalar_one()

    def _store_draft(
        self, db: Connection, context: TurnContext, execution: Row, reply: ParsedReply, seq: int
    ) -> tuple[int, dict[str, Any], dict[str, Any]]:
        """The draft's answer and version, Core statements (the execution row is held since
        _EXECUTION_LOCKED, see produced_text.append_draft_version); (answer pk, payload, answer
        data)."""
        title = (reply.title or "").strip()
        draft = (reply.draft or "").strip()
        answer_pk = self._insert_answer(
            db, context, "draft_message", f"{title}\n\n{draft}".strip(), reply.text_with_tags, {}, seq
        )
        now = _now()
        payload = append_draft_version(
            db, context.user_task_execution_pk, context.user_id, title=title, production=draft,
            text_type_fk=context.output_text_type_fk, text_type=context.output_text_type, message_pk=answer_pk,
            now=now,
        )
        complete = context.completes_execution and execution.status != "completed"
        name = not execution.title and title
        if complete or name:
            statement = _FINISH_NAMED if complete and name else _FINISH if complete else _NAME
            db.execute(statement, {"b_pk": context.user_task_execution_pk, "b_now": now, "b_title": title[:255]})
        payload["message_pk"] = answer_pk
        return answer_pk, payload, {"produced_text_version_pk": payload["produced_text_version_pk"]}

    def _write_trace(self, context: TurnContext) -> None:
        """The collected trace entries of a turn that stored no answer, in a transaction of their own."""
        if not context.trace:
            return
        try:
            with core_transaction(self._factory) as db:  # locked: a completion may append at once
                append_trace_entries(db, context.user_task_execution_pk, context.trace, lock=True)
            context.trace.clear()
        except Exception:  # observability must never break the user's turn
            log.exception("could not append to the reasoning trace of execution %s", context.user_task_execution_pk)
