"""The reasoning trace: one entry per LLM decision, kept with the execution.

Every LLM call that decides something is asked to open its reply with
``<reasoning>why</reasoning>``. The tag is hidden from the user by the tag parser (it is
a HIDDEN tag in ``mojodex_core.tags.spec``); its content becomes one trace entry:

* ``[TOOL_CALL] tool1, tool2: <why>`` when the model asked for tools;
* ``[DIRECT] <why>`` otherwise;
* ``[RULE] <what>`` for decisions taken by code (order turns write these).

When the model leaves the tag out, the entry falls back to the tool names with their
arguments, or to the first 80 characters of the reply.

``trace_entry`` is pure; ``append_trace`` writes entries in the caller's transaction, so
any decision point (instruct turns here, order turns after the merge) shares one trace. An
instruct turn collects its calls' entries and writes them with its answer (or, when it fails,
in a transaction of their own): see ``InstructTurn``.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterable, Mapping
from functools import lru_cache
from typing import Any

from sqlalchemy import Integer, String, Text, bindparam, func, insert, select, union_all
from sqlalchemy.engine import Connection
from sqlalchemy.orm import Session as DbSession

from mojodex_core.db import EXECUTION_LOCK
from mojodex_core.db.models import REASONING_KINDS, ReasoningTraceEntry, UserTaskExecution, utcnow
from mojodex_core.timestamps import iso_utc

log = logging.getLogger("mojodex.reasoning")

FALLBACK_CHARS = 80
# For prompts of other decision points (order parsing, intent classification): append it to the
# system message, then extract_reasoning() / trace_entry() / append_trace() the reply.
REASONING_INSTRUCTION = (
    "Open your reply with <reasoning>one short sentence: why you decide what you decide</reasoning>, "
    "before anything else. It is never shown to the user."
)
_KIND = re.compile(r"^\[([A-Z_]+)\]\s*")
_REASONING_TAG = re.compile(r"<reasoning>(.*?)(?:</reasoning>|$)", re.DOTALL | re.IGNORECASE)


def _call_name(call: Any) -> str:
    if isinstance(call, Mapping):
        function = call.get("function")
        if isinstance(function, Mapping):
            return str(function.get("name") or "?")
        return str(call.get("name") or call.get("tool_name") or "?")
    return str(getattr(call, "name", None) or getattr(call, "tool_name", "?"))


def _call_arguments(call: Any) -> Any:
    if isinstance(call, Mapping):
        function = call.get("function")
        if isinstance(function, Mapping):
            raw = function.get("arguments") or "{}"
            try:
                return json.loads(raw)
            except (TypeError, ValueError):
                return raw
        for key in ("arguments", "query", "args"):
            if key in call:
                return call[key]
        return {}
    return getattr(call, "query", None) or getattr(call, "arguments", None) or {}


def _arguments_text(arguments: Any) -> str:
    if isinstance(arguments, Mapping):
        return ", ".join(f"{k}={v!r}" for k, v in arguments.items())
    return str(arguments)


def trace_entry(reasoning: str | None, tool_calls: list, reply_text: str) -> str:
    """The trace entry of one decision.

    ``tool_calls`` items may be OpenAI tool calls (``{"function": {"name", "arguments"}}``),
    dicts with ``name`` and ``arguments``/``query``, or objects with ``name`` and ``query``.
    """
    why = " ".join((reasoning or "").split())
    if tool_calls:
        names = ", ".join(_call_name(c) for c in tool_calls)
        if not why:
            why = "; ".join(f"{_call_name(c)}({_arguments_text(_call_arguments(c))})" for c in tool_calls)
        return f"[TOOL_CALL] {names}: {why}"
    if not why:
        why = (reply_text or "").strip()[:FALLBACK_CHARS]
    return f"[DIRECT] {why}"


def extract_reasoning(text: str) -> tuple[str | None, str]:
    """``(reasoning, text without the tag)`` for callers that get a whole reply (non-streamed calls)."""
    match = _REASONING_TAG.search(text or "")
    if not match:
        return None, text or ""
    cleaned = (text[: match.start()] + text[match.end():]).strip()
    return match.group(1).strip() or None, cleaned


def entry_kind(entry: str) -> str:
    match = _KIND.match(entry)
    kind = match.group(1) if match else "DIRECT"
    return kind if kind in REASONING_KINDS else "DIRECT"


_trace = ReasoningTraceEntry.__table__
_COLUMNS = ("user_task_execution_fk", "position", "kind", "text", "source", "created_at")
# SQLite refuses a compound SELECT of more than 500 terms; a turn writes a few entries, an order turn
# tens: longer lists go in several statements.
ENTRIES_PER_STATEMENT = 100


@lru_cache(maxsize=16)
def trace_rows(count: int):  # noqa: ANN201 - a Select
    """The ``SELECT`` of ``count`` new entries (binds ``b_pk``, ``b_now`` and ``b_kind_/b_text_/
    b_source_<rank>``, see ``trace_params``), each at the execution's last position + its rank:
    the last position is read by the statement itself, before its own rows."""
    last = (
        select(func.coalesce(func.max(_trace.c.position), 0))
        .where(_trace.c.user_task_execution_fk == bindparam("b_pk"))
        .scalar_subquery()
    )
    rows = [
        select(
            bindparam("b_pk", type_=Integer), last + rank,
            bindparam(f"b_kind_{rank}", type_=String), bindparam(f"b_text_{rank}", type_=Text),
            bindparam(f"b_source_{rank}", type_=String), bindparam("b_now", type_=_trace.c.created_at.type),
        )
        for rank in range(1, count + 1)
    ]
    return rows[0] if count == 1 else union_all(*rows)


@lru_cache(maxsize=16)
def _append_statement(count: int):  # noqa: ANN202 - an Insert
    """``INSERT ... SELECT`` of ``trace_rows(count)``, returning the positions taken: one statement
    (one round trip) instead of reading the last position first."""
    return insert(_trace).from_select(list(_COLUMNS), trace_rows(count)).returning(
        _trace.c.position, _trace.c.kind, _trace.c.text
    )


def trace_columns() -> list[str]:
    return list(_COLUMNS)


def kept_entries(entries: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    """The ``(entry, source)`` pairs worth writing, as written: stripped, blank ones dropped."""
    return [(e.strip(), source[:64]) for e, source in entries if e and e.strip()]


def trace_params(user_task_execution_pk: int, chunk: list[tuple[str, str]], now: Any) -> dict[str, Any]:
    """The binds of ``trace_rows(len(chunk))`` for kept entries."""
    params: dict[str, Any] = {"b_pk": user_task_execution_pk, "b_now": now}
    for rank, (entry, source) in enumerate(chunk, start=1):
        params.update({f"b_kind_{rank}": entry_kind(entry), f"b_text_{rank}": entry, f"b_source_{rank}": source})
    return params


def log_written(user_task_execution_pk: int, written: Iterable[tuple[int, str, str]]) -> None:
    """One line per entry written, ``(position, kind, text)``: the model's decisions are worth a
    line; rules only when debugging."""
    for position, kind, text in sorted(written):
        level = logging.DEBUG if kind == "RULE" else logging.INFO
        log.log(level, "reasoning execution=%s #%d %s", user_task_execution_pk, position, text[:200])


_execution = UserTaskExecution.__table__
_LOCK_EXECUTION = (
    select(_execution.c.user_task_execution_pk)
    .where(_execution.c.user_task_execution_pk == bindparam("b_pk"))
    .with_for_update(**EXECUTION_LOCK)
)


def append_trace(
    db: DbSession | Connection, user_task_execution_pk: int, entries: Iterable[str], source: str, *, lock: bool = False
) -> None:
    """Append entries to the execution's trace, in order, in the caller's transaction (``lock``:
    see ``append_trace_entries``)."""
    append_trace_entries(db, user_task_execution_pk, [(entry, source) for entry in entries], lock=lock)


def append_trace_entries(
    db: DbSession | Connection, user_task_execution_pk: int, entries: Iterable[tuple[str, str]], *,
    lock: bool = False,
) -> None:
    """Append ``(entry, source)`` pairs to the execution's trace, in order, in the caller's transaction
    (an instruct turn's calls each have their source: the first call, then its tool follow-ups).

    Each entry's position is the last one + 1, read by its INSERT: two transactions appending to
    one execution at once would read the same last position, and the unique index would refuse
    the second. A turn's completion and an order turn's record append under the execution's row
    lock (EXECUTION_LOCK); a caller in a transaction of its own that may run beside them (a turn
    that stored no answer) passes ``lock``, and the lock is taken first (on SQLite a plain read:
    its writes hold the whole database). Other callers: home chat's routing appends to the execution
    it creates, the workflow engine and its review under the session's publication lock."""
    entries = kept_entries(entries)
    if not entries:
        return
    if lock:
        db.execute(_LOCK_EXECUTION, {"b_pk": user_task_execution_pk}).first()
    now = utcnow()
    for start in range(0, len(entries), ENTRIES_PER_STATEMENT):
        # Each statement reads the last position after the rows of the ones before it (same transaction).
        chunk = entries[start:start + ENTRIES_PER_STATEMENT]
        written = db.execute(_append_statement(len(chunk)), trace_params(user_task_execution_pk, chunk, now)).all()
        log_written(user_task_execution_pk, written)


def trace_page(
    db: DbSession, user_task_execution_pk: int, *, offset: int = 0, limit: int | None = None
) -> tuple[list[dict[str, Any]], int]:
    """The execution's entries in position order (``limit`` of them, all when None, after the first
    ``offset``) and the size of the whole trace.

    The size is counted by the statement reading the page (a window count), so an entry appended
    meanwhile is in both or in neither; only a page past the end counts on its own.
    """
    query = (
        select(ReasoningTraceEntry, func.count().over().label("total"))
        .where(ReasoningTraceEntry.user_task_execution_fk == user_task_execution_pk)
        .order_by(ReasoningTraceEntry.position)
    )
    if offset or limit is not None:
        query = query.offset(offset).limit(limit)
    rows = db.execute(query).all()
    entries = [
        {
            "position": row.position,
            "kind": row.kind,
            "text": row.text,
            "source": row.source,
            "created_at": iso_utc(row.created_at),
        }
        for row, _total in rows
    ]
    if rows:
        return entries, rows[0].total
    total = db.scalar(
        select(func.count()).where(ReasoningTraceEntry.user_task_execution_fk == user_task_execution_pk)
    )
    return entries, total or 0
