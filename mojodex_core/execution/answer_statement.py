"""Postgres: a turn's plain answer stored by one statement, in autocommit.

A question turn's completion (``turn_completion.TurnCompletion._complete``) was eight round trips
after the last token: BEGIN, the claim, the execution read under a row lock, the answer's INSERT,
the user message's link to it, the event, the trace entries, COMMIT. ``answer_statement`` makes
them one statement of data-modifying CTEs, atomic on its own:

* ``locked_fence`` (distributed mode): the session's lease fence, read ``FOR UPDATE`` as
  ``session_claims.check_fence`` does;
* ``locked_execution``: the execution's status, read ``FOR NO KEY UPDATE`` (a deletion in progress
  is waited for, and one that commits after it waits for this statement; a row that only names the
  execution, such as the spool's ``llm_call``, neither waits nor is waited for: see
  ``mojodex_core.db.EXECUTION_LOCK``);
* ``answer_id``: the answer's pk, taken from its sequence first, so that
* ``claimed``: the user message goes ``processing -> answered`` with its ``answer_message_fk`` in
  one UPDATE, only if the execution is not deleted (and the fence is current);
* ``answer``, ``announced``, ``traced``: the answer row, its event (payload completed with the
  answer's pk in SQL) and the trace entries, each ``SELECT ... FROM claimed``: nothing is written
  unless the claim was.

The statement returns the answer's pk, or ``NULL`` with what the caller needs to say why (the
fence, the execution's status, the message's as the statement's snapshot saw it: a claim refused
by a change committed since reads "changed"). It locks the lease row first, as the transaction
does, then the execution, then the message (the claim); the transaction locks the message before
the execution. The two orders never meet: both run under the session's publication lock
(``events.publishing``), one completion at a time.

The answer's pk is known before its row is inserted; a unique violation (a trace position taken
by a concurrent writer since the statement's snapshot, which a transaction's later statement
would have seen) rolls the whole statement back and the caller stores the answer in a transaction.
Other outcomes (an approval request, a draft, a new session language, a longer trace) and SQLite
keep the transaction.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from sqlalchemy import bindparam, cast, exists, func, insert, literal, select, update
from sqlalchemy.dialects.postgresql import JSONB, REGCLASS
from sqlalchemy.engine import Row

from mojodex_core.db import EXECUTION_LOCK
from mojodex_core.db.models import Message, ReasoningTraceEntry, SessionEvent, SessionRunner, UserTaskExecution
from mojodex_core.execution.events import announcing
from mojodex_core.execution.reasoning import ENTRIES_PER_STATEMENT, trace_columns, trace_rows

_message = Message.__table__
_execution = UserTaskExecution.__table__
_event = SessionEvent.__table__
_runner = SessionRunner.__table__
_trace = ReasoningTraceEntry.__table__

# The most trace entries the statement takes (one chunk of reasoning.append_trace_entries).
MAX_TRACE_ENTRIES = ENTRIES_PER_STATEMENT


@lru_cache(maxsize=32)
def answer_statement(fenced: bool, trace_entries: int):  # noqa: ANN201 - a Select
    """The statement (module docstring) for a session held under a lease fence or not, with
    ``trace_entries`` entries. Binds: ``b_message`` (the user message), ``b_pk`` (the execution),
    ``b_session``, ``b_fence`` when fenced, the answer's ``b_text``, ``b_text_with_tags``, ``b_seq``,
    ``b_created_at``, the event's ``b_payload``, and the trace's binds (``reasoning.trace_params``).
    No bind is named after a column of ``message``: SQLAlchemy would add it to the UPDATE's SET."""
    execution = select(_execution.c.status).where(_execution.c.user_task_execution_pk == bindparam("b_pk"))
    fence = None
    if fenced:
        fence = (
            select(_runner.c.fence)
            .where(_runner.c.session_id == bindparam("b_session"))
            .with_for_update()
            .cte("locked_fence")
        )
        # The lease row is locked first, as check_fence does in the transaction: the execution's
        # read waits for it (its filter), then locks its own row, then the claim the message's.
        execution = execution.where(exists(select(fence.c.fence)))
    locked = execution.with_for_update(**EXECUTION_LOCK).cte("locked_execution")  # FOR NO KEY UPDATE
    sequence = cast(func.pg_get_serial_sequence(literal("message"), literal("message_pk")), REGCLASS)
    answer_id = select(func.nextval(sequence).label("pk")).cte("answer_id")
    conditions = [
        _message.c.message_pk == bindparam("b_message"),
        _message.c.status == "processing",
        exists(select(locked.c.status).where(locked.c.status.is_distinct_from("deleted"))),
    ]
    if fence is not None:
        conditions.append(select(fence.c.fence).scalar_subquery() == bindparam("b_fence"))
    claimed = (
        update(_message)
        .where(*conditions)
        .values(status="answered", answer_message_fk=select(answer_id.c.pk).scalar_subquery())
        .returning(_message.c.message_pk)
        .cte("claimed")
    )
    answer = (
        insert(_message)
        .from_select(
            ["message_pk", "session_id", "user_task_execution_fk", "sender", "event_name", "text", "text_with_tags",
             "status", "data", "seq", "created_at"],
            select(
                answer_id.c.pk, bindparam("b_session"), bindparam("b_pk"), literal("assistant"),
                literal("mojo_message"), bindparam("b_text"), bindparam("b_text_with_tags"), literal("final"),
                func.jsonb_build_object(), bindparam("b_seq"),
                bindparam("b_created_at", type_=_message.c.created_at.type),
            ).select_from(claimed.join(answer_id, literal(True))),
        )
        .returning(_message.c.message_pk)
        .cte("answer")
    )
    announced = announcing(
        answer, "mojo_message", session=bindparam("b_session"), seq=bindparam("b_seq"),
        payload=bindparam("b_payload", type_=JSONB),
        created_at=bindparam("b_created_at", type_=_event.c.created_at.type),
    )
    columns = [
        select(answer.c.message_pk).scalar_subquery().label("answer_pk"),
        select(locked.c.status).scalar_subquery().label("execution_status"),
        select(_message.c.status).where(_message.c.message_pk == bindparam("b_message"))
        .scalar_subquery().label("message_status"),
    ]
    if fence is not None:
        columns.append(select(fence.c.fence).scalar_subquery().label("fence"))
    statement = select(*columns).add_cte(announced)
    if trace_entries:
        rows = trace_rows(trace_entries).subquery("new_entries")
        traced = (
            insert(_trace)
            .from_select(trace_columns(), select(*rows.c).where(exists(select(claimed.c.message_pk))))
            .returning(_trace.c.position, _trace.c.kind, _trace.c.text)
            .cte("traced")
        )
        written = func.json_agg(func.json_build_array(traced.c.position, traced.c.kind, traced.c.text))
        statement = statement.add_columns(select(written).scalar_subquery().label("traced"))
    return statement


def trace_written(row: Row) -> list[tuple[int, str, str]]:
    """The ``(position, kind, text)`` of the entries the statement wrote."""
    return [(int(p), str(k), str(t)) for p, k, t in (getattr(row, "traced", None) or [])]


def answer_binds(
    *, message_pk: int, user_task_execution_pk: int, session_id: str, text: str, text_with_tags: str,
    seq: int, created_at: Any, payload: dict[str, Any], fence: int | None,
) -> dict[str, Any]:
    binds = {
        "b_message": message_pk, "b_pk": user_task_execution_pk, "b_session": session_id, "b_text": text,
        "b_text_with_tags": text_with_tags, "b_seq": seq, "b_created_at": created_at, "b_payload": payload,
    }
    if fence is not None:
        binds["b_fence"] = fence
    return binds
