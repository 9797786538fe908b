"""The draft completion as InstructTurn stored it through the ORM (append_version and
version_payload) before it became Core statements, frozen here as the reference the Core path must
reproduce: the same rows, the same event payload byte for byte."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import update
from sqlalchemy.engine import Connection, Row
from sqlalchemy.orm import Session as DbSession

from mojodex_core.db.models import UserTaskExecution
from mojodex_core.execution.produced_text import append_version, version_payload
from mojodex_core.execution.turn import InstructTurn
from mojodex_core.execution.turn_completion import TurnContext
from mojodex_core.tags import ParsedReply

_execution = UserTaskExecution.__table__


@dataclass(frozen=True)
class _ExecutionKey:
    user_task_execution_pk: int


class LegacyDraftTurn(InstructTurn):
    def _store_draft(
        self, db: Connection, context: TurnContext, execution: Row, reply: ParsedReply, seq: int
    ) -> tuple[int, dict[str, Any], dict[str, Any]]:
        # The completion runs on a Core connection now; the ORM reference joins its transaction.
        with DbSession(bind=db) as orm:
            return self._store_draft_orm(orm, context, execution, reply, seq)

    def _store_draft_orm(
        self, db: DbSession, context: TurnContext, execution: Row, reply: ParsedReply, seq: int
    ) -> tuple[int, dict[str, Any], dict[str, Any]]:
        title = (reply.title or "").strip()
        draft = (reply.draft or "").strip()
        answer_pk = self._insert_answer(
            db, context, "draft_message", f"{title}\n\n{draft}".strip(), reply.text_with_tags, {}, seq
        )
        version = append_version(
            db, _ExecutionKey(context.user_task_execution_pk), context.user_id,  # type: ignore[arg-type]
            title=title, production=draft, origin="assistant", text_type_fk=context.output_text_type_fk,
            message_pk=answer_pk,
        )
        finished: dict[str, Any] = {}
        if execution.status != "completed":
            finished.update(status="completed", end_date=datetime.now(UTC))
        if not execution.title and title:
            finished["title"] = title[:255]
        if finished:
            db.execute(
                update(_execution)
                .where(_execution.c.user_task_execution_pk == context.user_task_execution_pk)
                .values(**finished)
            )
        db.flush()
        payload = version_payload(version, version.produced_text, context.output_text_type)
        payload["message_pk"] = answer_pk
        return answer_pk, payload, {"produced_text_version_pk": version.produced_text_version_pk}
