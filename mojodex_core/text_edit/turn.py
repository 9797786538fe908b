"""One text edit: the action's prompt on a produced text version, streamed, stored as a new version.

It answers a user message of event_name "text_edit_action" (stored by the route, idempotent on
message_id) and runs on the session's runner like a turn, so edits and turns never overlap.
Its outcome is committed before any final event is published; a failure stores no version,
marks the message failed and publishes an ``error`` event (the client may retry the same
message_id).
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass

from sqlalchemy.orm import Session as DbSession
from sqlalchemy.orm import sessionmaker

from mojodex_core.db import EXECUTION_LOCK, transaction
from mojodex_core.db.models import (
    MESSAGE_UNANSWERED,
    Message,
    ProducedText,
    ProducedTextVersion,
    Session,
    TextEditAction,
    User,
    UserTaskExecution,
)
from mojodex_core.execution.coalescer import TokenCoalescer
from mojodex_core.execution.events import EventPublisher
from mojodex_core.execution.failures import EXECUTION_DELETED, add_failure, failure_reason
from mojodex_core.execution.jobs import TurnJob
from mojodex_core.execution.produced_text import append_version, version_payload
from mojodex_core.execution.prompt import PromptError
from mojodex_core.execution.reasoning import append_trace, trace_entry
from mojodex_core.execution.scheduler import scheduler
from mojodex_core.execution.session_claims import check_fence
from mojodex_core.llm import LLMNotConfigured, LLMProvider
from mojodex_core.tags import ParsedReply, TagStreamParser
from mojodex_core.text_edit.prompt import edit_messages

log = logging.getLogger("mojodex.text_edit")

EVENT_NAME = "text_edit_action"  # the event_name of the user message an edit answers
ORIGIN = "text_edit"  # produced_text_version.origin of an edited version
NO_LLM = "No LLM configured: text edit actions need one (set MOJODEX_LLM_BASE_URL or OPENAI_API_KEY)."


LABEL = "TEXT_EDIT_ACTION"  # the LLM call's label and its trace entry's source


class EditFailed(Exception):
    """An edit that cannot produce a version; the message is shown to the user."""


@dataclass
class EditContext:
    session_id: str
    message_pk: int
    message_id: str | None
    user_task_execution_pk: int
    user_id: str
    text_edit_action_pk: int
    source_version_pk: int
    title: str
    text_type_fk: int | None
    text_type: str | None
    llm_messages: list[dict[str, str]]
    setup_error: str | None = None


class TextEditTurn:
    def __init__(
        self,
        session_factory: sessionmaker[DbSession],
        events: EventPublisher,
        llm: LLMProvider | None,
        *,
        coalesce_ms: int = 30,
        turn_timeout_s: float = 180.0,
        max_tokens: int | None = None,
    ) -> None:
        self._factory = session_factory
        self._events = events
        self._llm = llm
        self._coalesce_ms = coalesce_ms
        self._turn_timeout_s = turn_timeout_s
        self._max_tokens = max_tokens

    def __call__(self, job: TurnJob, cancel: threading.Event) -> None:
        context = self._begin(job)
        if context is None:
            return
        timer = scheduler.call_later(self._turn_timeout_s, cancel.set)
        try:
            if context.setup_error is not None:
                raise EditFailed(context.setup_error)
            reply = self._generate(context, cancel)
            self._complete(context, reply)
            log.info("text edit done session=%s message_pk=%s action=%s", context.session_id, context.message_pk,
                     context.text_edit_action_pk)
        except Exception as exc:
            reason = failure_reason(
                exc, shown=(EditFailed,), no_llm=NO_LLM, what="text edit",
                cancelled="The edit was cancelled or took too long. Please retry.",
                crashed="The edit failed because of an internal error. Please retry.",
                where=f"session={context.session_id} message_pk={context.message_pk}",
            )
            self._fail(context, reason)
        finally:
            timer.cancel()

    def _begin(self, job: TurnJob) -> EditContext | None:
        with transaction(self._factory) as db:
            message = db.get(Message, job.message_pk, with_for_update=True)
            if message is None or message.status != "pending":
                return None  # answered already: never two versions for one message_id
            data = message.data or {}
            execution = db.get(UserTaskExecution, message.user_task_execution_fk)
            version = db.get(ProducedTextVersion, data.get("produced_text_version_pk") or 0)
            action = db.get(TextEditAction, data.get("text_edit_action_pk") or 0)
            session = db.get(Session, message.session_id)
            user = db.get(User, session.user_id)
            setup_error = None
            llm_messages: list[dict[str, str]] = []
            if execution is None or execution.status == "deleted":
                setup_error = EXECUTION_DELETED
            elif version is None or action is None:
                setup_error = "The text or the edit action no longer exists."
            else:
                try:
                    llm_messages = edit_messages(
                        action.instruction,
                        title=version.title or "",
                        draft=version.production,
                        language=session.language or user.language_code,
                        text_type=version.text_type.name if version.text_type else None,
                        username=user.name,
                    )
                except PromptError:
                    log.exception("text edit prompt failed action=%s", action.name)
                    setup_error = "The edit action's prompt failed to render. Please tell an administrator."
            message.status = "processing"
            return EditContext(
                session_id=message.session_id,
                message_pk=message.message_pk,
                message_id=message.message_id,
                user_task_execution_pk=message.user_task_execution_fk,
                user_id=user.user_id,
                text_edit_action_pk=data.get("text_edit_action_pk"),
                source_version_pk=data.get("produced_text_version_pk"),
                title=(version.title if version else "") or "",
                text_type_fk=version.text_type_fk if version else None,
                text_type=version.text_type.name if version and version.text_type else None,
                llm_messages=llm_messages,
                setup_error=setup_error,
            )

    def _generate(self, context: EditContext, cancel: threading.Event) -> ParsedReply:
        if self._llm is None:
            raise LLMNotConfigured(NO_LLM)
        parser = TagStreamParser()
        base = {"session_id": context.session_id, "user_task_execution_pk": context.user_task_execution_pk,
                "text_edit_action_pk": context.text_edit_action_pk}

        def publish(channel: str, text: str) -> None:
            if channel in ("title", "draft"):  # anything outside the tags is not part of the text
                self._events.publish(
                    context.session_id, "draft_token", {**base, "part": channel, "delta": text}, durable=False
                )

        coalescer = TokenCoalescer(publish, self._coalesce_ms)

        def on_token(chunk: str) -> None:
            for delta in parser.feed(chunk):
                coalescer.add(delta.channel, delta.text)

        try:
            self._llm.chat(
                context.llm_messages, label=LABEL, stream=True, on_token=on_token,
                user_task_execution_pk=context.user_task_execution_pk, cancel=cancel, max_tokens=self._max_tokens,
            )
        except BaseException:
            coalescer.discard()
            raise
        deltas, reply = parser.finish()
        for delta in deltas:
            coalescer.add(delta.channel, delta.text)
        coalescer.close()
        return reply

    def _complete(self, context: EditContext, reply: ParsedReply) -> None:
        draft = (reply.draft or "").strip()
        if not draft:
            raise EditFailed("The assistant returned no text for this edit. Please retry.")
        title = (reply.title or "").strip() or context.title
        with self._events.publishing(context.session_id) as publication, transaction(self._factory) as db:
            check_fence(db, context.session_id)  # distributed: a worker that lost its lease stores nothing
            user_message = db.get(Message, context.message_pk)
            user_message.status = "answered"
            db.flush()
            execution = db.get(UserTaskExecution, context.user_task_execution_pk, with_for_update=EXECUTION_LOCK)
            if execution is None or execution.status == "deleted":
                raise EditFailed(EXECUTION_DELETED)
            answer = Message(
                session_id=context.session_id, user_task_execution_fk=context.user_task_execution_pk,
                sender="assistant", event_name="draft_message", text=f"{title}\n\n{draft}".strip(),
                text_with_tags=f"<execution><title>{title}</title><draft>{draft}</draft></execution>",
                status="final", data={},
            )
            db.add(answer)
            db.flush()
            version = append_version(
                db, execution, context.user_id, title=title, production=draft, origin=ORIGIN,
                text_type_fk=context.text_type_fk, message_pk=answer.message_pk,
            )
            db.flush()
            answer.data = {"produced_text_version_pk": version.produced_text_version_pk,
                           "source_produced_text_version_pk": context.source_version_pk,
                           "text_edit_action_pk": context.text_edit_action_pk}
            user_message.answer_message_fk = answer.message_pk
            reasoning = " ".join(reply.captured.get("reasoning", [])) or None
            append_trace(db, context.user_task_execution_pk, [trace_entry(reasoning, [], draft)], LABEL)
            payload = version_payload(version, db.get(ProducedText, version.produced_text_fk), context.text_type)
            answer.seq = publication.add(db, "draft_message", {
                **payload,
                "message_pk": answer.message_pk,
                "session_id": context.session_id,
                "user_message_pk": context.message_pk,
                "message_id": context.message_id,
                "text_edit_action_pk": context.text_edit_action_pk,
                "source_produced_text_version_pk": context.source_version_pk,
            })

    def _fail(self, context: EditContext, reason: str) -> None:
        try:
            with self._events.publishing(context.session_id) as publication, transaction(self._factory) as db:
                add_failure(db, publication, db.get(Message, context.message_pk), message_id=context.message_id,
                            user_task_execution_pk=context.user_task_execution_pk, reason=reason, retryable=True,
                            extra={"kind": "text_edit_action", "text_edit_action_pk": context.text_edit_action_pk})
        except Exception:
            log.exception("could not record the failure of text edit message_pk=%s", context.message_pk)
            with transaction(self._factory) as db:
                message = db.get(Message, context.message_pk)
                if message is not None and message.status in MESSAGE_UNANSWERED:
                    message.status, message.error = "failed", reason
        log.warning("text edit failed session=%s message_pk=%s: %s", context.session_id, context.message_pk, reason)
