"""A turn's conversation, read newest first and only as far as the prompt's budget.

The prompt keeps the newest messages that fit ``context_tokens`` (``window_newest_first``).
Reading the whole session to keep its end made every turn of a long session pay for all of
it (bench/long_session.py: a session of 3,000 exchanges took 82 ms to its first token, against
19 ms for one of 250 whose prompt is as large). Here the user messages are read newest first,
each with its answer, in pages that double in size, and the reading stops at the first message
that does not fit: the same messages as windowing the whole conversation, for what fits plus
at most one page.

Each user message is followed by its own answer (``answer_message_fk``). Ordering by pk would
not do: a message sent while a turn runs gets a smaller pk than that turn's answer.
"""

from __future__ import annotations

from collections.abc import Iterator

from sqlalchemy import and_, bindparam, or_, select
from sqlalchemy.engine import Connection
from sqlalchemy.orm import Session as DbSession

from mojodex_core.db.models import Message
from mojodex_core.execution.prompt import ChatMessage, window_newest_first

FIRST_PAGE = 32  # user messages; a short session's whole history in one query

_user = Message.__table__.alias("user_message")
_answer = Message.__table__.alias("answer")


def _page(scoped: bool, correlated: bool):  # noqa: ANN202
    """A page of user messages below ``b_before``, newest first, each with its answer (if any).

    Scoped: a home chat session hosts several executions; a task's turn shows this one's messages
    and the free chat's, never another task's (its result would read as this task's).

    Correlated (Postgres): the answer is read by a lateral subquery whose only condition is its
    key, fenced by ``OFFSET 0`` so that Postgres cannot merge the answer's other conditions into
    it; they are checked on the row found. Without statistics (a new database, until autovacuum
    analyzes it) Postgres rates every index of the table alike for one session's rows: given the
    session's condition inside the lookup, it scanned the whole session for each user message
    (as an outer join's filter, then by the session's index in each of three subqueries): 7.7 ms
    for a page of 64 in a session of 318 messages. SQLite joins by key anyway."""

    def in_scope(table):  # noqa: ANN001, ANN202
        same_session = table.c.session_id == bindparam("b_session")
        if not scoped:
            return same_session
        return and_(same_session, or_(table.c.user_task_execution_fk == bindparam("b_pk"),
                                      table.c.user_task_execution_fk.is_(None)))

    if correlated:
        answer = (
            select(_answer.c.message_pk, _answer.c.text, _answer.c.text_with_tags, _answer.c.sender,
                   _answer.c.session_id, _answer.c.user_task_execution_fk)
            .where(_answer.c.message_pk == _user.c.answer_message_fk)
            .offset(0)  # the fence: nothing else goes into the lookup
            .lateral("answer")
        )
    else:
        answer = _answer
    joined = _user.outerjoin(answer, and_(answer.c.message_pk == _user.c.answer_message_fk,
                                          answer.c.sender == "assistant", in_scope(answer)))
    return (
        select(
            _user.c.message_pk, _user.c.text, answer.c.message_pk.label("answer_pk"),
            answer.c.text.label("answer_text"), answer.c.text_with_tags.label("answer_text_with_tags"),
        )
        .select_from(joined)
        .where(in_scope(_user), _user.c.sender == "user", _user.c.message_pk < bindparam("b_before"))
        .order_by(_user.c.message_pk.desc())
        .limit(bindparam("b_limit"))
    )


# (scoped, correlated) -> statement
_PAGES = {(scoped, correlated): _page(scoped, correlated) for scoped in (True, False) for correlated in (True, False)}


def _page_for(db: Connection | DbSession, *, scoped: bool):  # noqa: ANN202
    """The page statement for the dialect of ``db`` (a Connection, or a Session: its bind for
    the message table)."""
    bind = db if isinstance(db, Connection) else db.get_bind(Message)
    return _PAGES[(scoped, bind.dialect.name == "postgresql")]


def _newest_first(
    db: Connection | DbSession, statement, params: dict, upto_pk: int, *, home_chat: bool  # noqa: ANN001
) -> Iterator[ChatMessage]:
    """The conversation up to the user message ``upto_pk`` (whose answer is not shown), newest
    message first, read page by page as the caller goes on."""
    before, limit = upto_pk + 1, FIRST_PAGE
    while True:
        rows = db.execute(statement, {**params, "b_before": before, "b_limit": limit}).all()
        for row in rows:
            if home_chat and not row.text:
                continue  # nothing the user wrote: neither it nor its answer is shown
            if row.answer_pk is not None and row.message_pk != upto_pk:
                if not home_chat:
                    yield ChatMessage(role="assistant", content=row.answer_text_with_tags or row.answer_text)
                elif row.answer_text:
                    yield ChatMessage(role="assistant", content=row.answer_text)
            yield ChatMessage(role="user", content=row.text)
        if len(rows) < limit:
            return
        before, limit = rows[-1].message_pk, limit * 2


def read_task_conversation(
    db: Connection | DbSession, session_id: str, execution_pk: int, upto_pk: int, budget_tokens: int
) -> list[ChatMessage]:
    """A task turn's view, oldest first, windowed to ``budget_tokens``: this execution's messages
    and the free chat's, each answer as the model wrote it (its tags too)."""
    messages = _newest_first(db, _page_for(db, scoped=True), {"b_session": session_id, "b_pk": execution_pk}, upto_pk,
                             home_chat=False)
    return window_newest_first(messages, budget_tokens)


def read_home_chat_conversation(
    db: Connection | DbSession, session_id: str, upto_pk: int, budget_tokens: int
) -> list[ChatMessage]:
    """The home chat's view, oldest first, windowed to ``budget_tokens``: every message of the
    session, only what the user saw of it (an answer's visible text; a message with no text is
    left out, and so is its answer)."""
    messages = _newest_first(db, _page_for(db, scoped=False), {"b_session": session_id}, upto_pk, home_chat=True)
    return window_newest_first(messages, budget_tokens)
