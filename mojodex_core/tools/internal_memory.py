"""internal_memory: full-text search over the caller's own earlier produced texts and messages.

Only the calling user's rows are ever read: every query is filtered on the user id before
any text is matched. The current execution is left out (its texts are already in the prompt),
and so are deleted executions.

* Postgres: ``to_tsvector('simple', text) @@ plainto_tsquery('simple', query)``, ranked by ts_rank.
* SQLite: FTS5 at query time. The user's candidate rows are copied into a TEMP fts5 table of
  the tool's own connection, matched, and the table is dropped. Nothing is added to the schema
  (Alembic autogenerate stays clean) and the index can never hold another user's text. The
  cost is linear in the user's own history, which is fine for one user's texts.
"""

from __future__ import annotations

import re
from typing import Any

from sqlalchemy import func, literal, or_, select, text, union_all
from sqlalchemy.orm import Session as DbSession

from mojodex_core.db import transaction
from mojodex_core.db.models import Message, ProducedText, ProducedTextVersion, Session, UserTaskExecution
from mojodex_core.timestamps import iso_utc
from mojodex_core.tools.base import Tool, ToolContext, ToolError
from mojodex_core.tools.registry import register

SNIPPET_CHARS = 400
_WORD = re.compile(r"\w+", re.UNICODE)


def _candidates(user_id: str, current_pk: int):  # noqa: ANN202 - a SQLAlchemy selectable
    live_execution = or_(UserTaskExecution.user_task_execution_pk.is_(None), UserTaskExecution.status != "deleted")
    texts = (
        select(
            literal("produced_text").label("kind"),
            ProducedTextVersion.produced_text_version_pk.label("ref"),
            ProducedText.user_task_execution_fk.label("user_task_execution_pk"),
            (ProducedTextVersion.title + literal("\n") + ProducedTextVersion.production).label("body"),
            ProducedTextVersion.created_at.label("created_at"),
        )
        .join(ProducedText, ProducedText.produced_text_pk == ProducedTextVersion.produced_text_fk)
        .join(UserTaskExecution, UserTaskExecution.user_task_execution_pk == ProducedText.user_task_execution_fk)
        .where(ProducedText.user_id == user_id, ProducedText.user_task_execution_fk != current_pk, live_execution)
    )
    messages = (
        select(
            literal("message").label("kind"),
            Message.message_pk.label("ref"),
            Message.user_task_execution_fk.label("user_task_execution_pk"),
            Message.text.label("body"),
            Message.created_at.label("created_at"),
        )
        .join(Session, Session.session_id == Message.session_id)
        .outerjoin(UserTaskExecution, UserTaskExecution.user_task_execution_pk == Message.user_task_execution_fk)
        .where(
            Session.user_id == user_id,
            Message.sender.in_(("user", "assistant")),
            Message.status.in_(("answered", "final")),
            or_(Message.user_task_execution_fk.is_(None), Message.user_task_execution_fk != current_pk),
            live_execution,
        )
    )
    return union_all(texts, messages).subquery("memory")


def _row(row: Any) -> dict[str, Any]:
    created = row.created_at
    return {
        "kind": row.kind,
        "user_task_execution_pk": row.user_task_execution_pk,
        "text": (row.body or "").strip()[:SNIPPET_CHARS],
        "created_at": iso_utc(created),
    }


def _search_postgres(db: DbSession, memory: Any, query: str, limit: int) -> list[dict[str, Any]]:
    vector = func.to_tsvector("simple", memory.c.body)
    tsquery = func.plainto_tsquery("simple", query)
    rows = db.execute(
        select(memory).where(vector.op("@@")(tsquery))
        .order_by(func.ts_rank(vector, tsquery).desc(), memory.c.created_at.desc())
        .limit(limit)
    )
    return [_row(r) for r in rows]


def _search_sqlite(db: DbSession, memory: Any, query: str, limit: int) -> list[dict[str, Any]]:
    words = _WORD.findall(query)
    if not words:
        return []
    match = " ".join('"' + w.replace('"', '""') + '"' for w in words)  # every word, like plainto_tsquery
    db.execute(text("DROP TABLE IF EXISTS temp.internal_memory_fts"))
    db.execute(text(
        "CREATE VIRTUAL TABLE temp.internal_memory_fts USING fts5("
        "body, kind UNINDEXED, user_task_execution_pk UNINDEXED, created_at UNINDEXED)"
    ))
    try:
        rows = [
            {"body": row.body or "", "kind": row.kind, "pk": row.user_task_execution_pk, "created": str(row.created_at)}
            for row in db.execute(select(memory))
        ]
        if rows:  # one executemany
            db.execute(
                text("INSERT INTO temp.internal_memory_fts (body, kind, user_task_execution_pk, created_at) "
                     "VALUES (:body, :kind, :pk, :created)"),
                rows,
            )
        found = db.execute(
            text("SELECT body, kind, user_task_execution_pk, created_at FROM temp.internal_memory_fts "
                 "WHERE internal_memory_fts MATCH :match ORDER BY rank LIMIT :limit"),
            {"match": match, "limit": limit},
        )
        return [_row(r) for r in found]
    finally:
        db.execute(text("DROP TABLE IF EXISTS temp.internal_memory_fts"))


class InternalMemoryTool(Tool):
    name = "internal_memory"
    description = "Searches the user's own earlier results and messages (full-text search)."
    query_schema = {
        "type": "object",
        "properties": {
            "query": {"type": "string", "minLength": 1, "maxLength": 500, "description": "Words to search for."},
            "limit": {"type": "integer", "minimum": 1, "maximum": 20, "description": "How many matches (default 5)."},
        },
        "required": ["query"],
        "additionalProperties": False,
    }

    def run(self, query: dict[str, Any], context: ToolContext) -> dict[str, Any]:
        limit = int(query.get("limit") or context.config.get("limit") or 5)
        with transaction(context.session_factory) as db:
            memory = _candidates(context.user_id, context.user_task_execution_pk)
            dialect = db.get_bind().dialect.name
            if dialect == "postgresql":
                matches = _search_postgres(db, memory, query["query"], limit)
            elif dialect == "sqlite":
                matches = _search_sqlite(db, memory, query["query"], limit)
            else:
                raise ToolError(f"internal_memory does not support the {dialect} database")
        return {"matches": matches, "count": len(matches)}


register(InternalMemoryTool())

__all__ = ["InternalMemoryTool"]
