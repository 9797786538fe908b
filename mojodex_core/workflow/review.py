"""The review chat of a rejected step: the workflow assistant reads the achieved steps and the step the
user rejected, and answers with exactly one of an explanation, a clarifying question or a user
instruction. An instruction invalidates the step, is kept as a learned instruction, and the step runs
again with it in its prompt: the ``workflow_run`` message that runs it is stored with the answer, so
a process that stops right after still leaves it to the start-up resume. The assistant's message is
stored and sent like every message; its reasoning goes to the execution's reasoning trace.
"""

from __future__ import annotations

import json
import logging
import threading
from dataclasses import dataclass
from typing import Any, Callable, Literal

from pydantic import BaseModel, Field, model_validator
from sqlalchemy import select, update
from sqlalchemy.orm import Session as DbSession
from sqlalchemy.orm import sessionmaker

from mojodex_core.db import EXECUTION_LOCK, transaction
from mojodex_core.db.models import Message, User, UserTaskExecution
from mojodex_core.execution.events import EventPublisher
from mojodex_core.execution.failures import EXECUTION_DELETED, fail_or_mark, failure_reason
from mojodex_core.execution.jobs import TurnJob
from mojodex_core.execution.reasoning import append_trace
from mojodex_core.knowledge import knowledge_block_for
from mojodex_core.llm import LLMNotConfigured, LLMProvider
from mojodex_core.workflow import store
from mojodex_core.workflow.runner import request_run
from mojodex_core.workflow.service import invalidate

log = logging.getLogger("mojodex.workflow")

LABEL = "WORKFLOW_REVIEW"
CONVERSATION_MESSAGES = 20
REVIEW_CLOSED = "This step is no longer under review (it was restarted or run again): your message was not acted on."
ReviewKind = Literal["explanation", "question", "instruction"]


class ReviewDecision(BaseModel):
    reasoning: str = Field(description="One short sentence: why you answer this way. Never shown to the user.")
    kind: ReviewKind = Field(description="explanation, question or instruction: exactly one.")
    message: str = Field(description="What you say to the user, in their language.")
    instruction: str | None = Field(default=None, description="For kind instruction: the instruction for the "
                                    "step, written as an order to the assistant running it.")

    @model_validator(mode="after")
    def _instruction_given(self) -> ReviewDecision:
        if self.kind == "instruction" and not (self.instruction or "").strip():
            raise ValueError("kind instruction needs the instruction")
        if not self.message.strip():
            raise ValueError("message must not be empty")
        return self


SYSTEM = """You are the assistant of {username}, running a workflow: {task}.
{username} rejected the result of a step and is telling you why, in this chat.

STEPS ALREADY ACHIEVED
{achieved}

THE STEP {username} REJECTED: {step} ({definition})
Its parameter: {parameter}
Its result: {result}

Answer the user's last message with exactly one of:
- kind "explanation": explain why the step gave this result (when the user asks why);
- kind "question": ask one short clarifying question (when you do not know what they want changed);
- kind "instruction": when you know what to change, give in "instruction" the order the step's assistant must
  follow on its next run (general enough to apply again later), and tell the user in "message" that you run
  the step again with it.
Write "message" in the user's language ({language}). Answer with JSON only:
{{"reasoning": "...", "kind": "explanation" | "question" | "instruction", "message": "...", "instruction": "..."}}"""


@dataclass
class _Review:
    session_id: str
    execution_pk: int
    message_pk: int
    message_id: str | None
    row_pk: int
    messages: list[dict[str, str]]


@dataclass
class _Closed:
    session_id: str
    message_pk: int
    message_id: str | None
    execution_pk: int


class ReviewTurn:
    def __init__(self, factory: sessionmaker[DbSession], events: EventPublisher, llm: LLMProvider | None,
                 run_workflow: Callable[[TurnJob, threading.Event], None], *, max_tokens: int | None = None) -> None:
        """``run_workflow`` answers a ``workflow_run`` message (the workflow's turn handler)."""
        self._max_tokens = max_tokens
        self._factory = factory
        self._events = events
        self._llm = llm
        self._run_workflow = run_workflow

    def __call__(self, job: TurnJob, cancel: threading.Event) -> None:
        review = self._begin(job)
        if isinstance(review, _Closed):
            self._closed(review)
            return
        if review is None:
            return
        try:
            if self._llm is None:
                raise LLMNotConfigured("No LLM configured: the review chat needs one.")
            decision = self._llm.structured(review.messages, ReviewDecision, label=LABEL,
                                            user_task_execution_pk=review.execution_pk, cancel=cancel,
                                            max_tokens=self._max_tokens)
            outcome = self._complete(review, decision)
        except Exception as exc:
            reason = failure_reason(exc, what="review turn", where=f"execution={review.execution_pk}")
            fail_or_mark(self._factory, self._events, session_id=review.session_id, message_pk=review.message_pk,
                         message_id=review.message_id, user_task_execution_pk=review.execution_pk, reason=reason)
            return
        if isinstance(outcome, str):  # closed (a restart) or deleted while the model answered
            self._closed(review, outcome)
            return
        if outcome is not None:  # the step runs again, now, on this session's runner
            self._run_workflow(TurnJob(session_id=review.session_id, message_pk=outcome), cancel)

    def _begin(self, job: TurnJob) -> _Review | _Closed | None:
        with transaction(self._factory) as db:
            message = db.get(Message, job.message_pk, with_for_update=True)
            if message is None or message.status != "pending":
                return None
            execution = db.get(UserTaskExecution, message.user_task_execution_fk)
            task = store.task_of(db, execution)
            steps = {s.rank: s for s in store.workflow_steps(task)}
            runs = store.live_runs(db, execution.user_task_execution_pk)
            rejected = next((r for r in runs if r.validated is False and r.status == "done"), None)
            if rejected is None:  # a restart closed the review meanwhile
                return _Closed(message.session_id, message.message_pk, message.message_id,
                               execution.user_task_execution_pk)
            message.status = "processing"
            user = db.get(User, execution.user_task.user_id)
            achieved = [
                f"- {steps[r.rank].name if r.rank in steps else r.rank}: parameter {json.dumps(r.parameter)}, "
                f"result {json.dumps(r.result)}"
                for r in runs if r.validated and r.rank <= rejected.rank and r.pk != rejected.pk
            ]
            step = steps.get(rejected.rank)
            # What the assistant knows (its knowledge file, the user's local time, their profile).
            knowledge = knowledge_block_for(db, user, platform=execution.session.platform,
                                            language=execution.session.language or user.language_code)
            system = (f"{knowledge}\n\n" if knowledge else "") + SYSTEM.format(
                username=user.name, task=task.definition_for_system, achieved="\n".join(achieved) or "(none)",
                step=step.name if step else rejected.rank, definition=step.definition if step else "",
                parameter=json.dumps(rejected.parameter, ensure_ascii=False),
                result=json.dumps(rejected.result, ensure_ascii=False),
                language=execution.session.language or user.language_code,
            )
            return _Review(
                session_id=execution.session_id, execution_pk=execution.user_task_execution_pk,
                message_pk=message.message_pk, message_id=message.message_id, row_pk=rejected.pk,
                messages=[{"role": "system", "content": system}] + self._conversation(db, execution, message),
            )

    @staticmethod
    def _conversation(db: DbSession, execution: UserTaskExecution, upto: Message) -> list[dict[str, str]]:
        rows = list(db.scalars(
            select(Message)
            .where(Message.session_id == execution.session_id, Message.event_name.in_(("user_message", "mojo_message")),
                   Message.message_pk <= upto.message_pk)
            .order_by(Message.message_pk.desc()).limit(CONVERSATION_MESSAGES)
        ))
        return [{"role": "user" if r.sender == "user" else "assistant", "content": r.text} for r in reversed(rows)]

    def _closed(self, review: _Review | _Closed, reason: str = REVIEW_CLOSED) -> None:
        # Whenever sent again, the message would run in another review (or none): final, unlike a deletion.
        fail_or_mark(self._factory, self._events, session_id=review.session_id, message_pk=review.message_pk,
                     message_id=review.message_id, user_task_execution_pk=review.execution_pk,
                     reason=reason, retryable=False, final=reason == REVIEW_CLOSED)

    def _complete(self, review: _Review, decision: ReviewDecision) -> int | str | None:
        """Stores the answer; on an instruction, returns the pk of the ``workflow_run`` message stored
        with it, which runs the step again. When the review was closed (a restart) or the execution
        deleted meanwhile, the decision is traced, nothing is answered, and the reason is returned:
        the caller fails the message with it."""
        with self._events.publishing(review.session_id) as publication, transaction(self._factory) as db:
            row = db.get(store.StepRow, review.row_pk, with_for_update=True)
            # Locked after the step row, as the routes do: a deletion committed meanwhile is seen.
            execution = db.get(UserTaskExecution, review.execution_pk, with_for_update=EXECUTION_LOCK)
            if execution is None or execution.status == "deleted":
                return EXECUTION_DELETED
            still_rejected = row is not None and row.status == "done" and row.validated is False
            append_trace(db, review.execution_pk, [f"[DIRECT] {decision.kind}: {decision.reasoning}"], LABEL)
            if not still_rejected:
                return REVIEW_CLOSED
            user_message = db.get(Message, review.message_pk)
            user_message.status = "answered"
            data: dict[str, Any] = {"review_kind": decision.kind, "user_workflow_step_execution_pk": review.row_pk}
            if decision.kind == "instruction":
                data["learned_instruction"] = decision.instruction.strip()
            answer = Message(
                session_id=review.session_id, user_task_execution_fk=review.execution_pk, sender="assistant",
                event_name="mojo_message", text=decision.message.strip(), text_with_tags=None, status="final",
                data=data,
            )
            db.add(answer)
            db.flush()
            user_message.answer_message_fk = answer.message_pk
            answer.seq = publication.add(db, "mojo_message", {
                "text": answer.text, "message_pk": answer.message_pk, **data, "session_id": review.session_id,
                "user_task_execution_pk": review.execution_pk, "user_message_pk": review.message_pk,
            })
            if decision.kind != "instruction":
                return None
            db.execute(update(store.StepRow).where(store.StepRow.user_workflow_step_execution_pk == review.row_pk)
                       .values(learned_instruction=decision.instruction.strip()))
            db.refresh(row)
            invalidate(db, publication, [row], "user instruction")
            run = request_run(db, review.session_id, review.execution_pk, "user instruction")
        log.info("review of step execution %s: %s", review.row_pk, decision.kind)
        return run.message_pk
