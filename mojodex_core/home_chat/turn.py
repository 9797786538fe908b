"""The turn that answers a home chat message.

* The chat runs a task (it was routed to one that has not produced its result yet): the turn of
  the task's type answers (an instruct task's with its prompt, an order's through the order
  engine); once the result is produced (an order: once finished) the chat is free again.
* Free chat: the home chat prompt (knowledge, the user's tasks, how to route) is sent with the
  conversation. The model answers itself, or routes: ``<route_to_task>NAME</route_to_task>`` or
  a ``route_to_task`` function call. A route to one of the user's instruct or order tasks creates
  its execution in this session (an order's conversation too), records the decision in its
  reasoning trace, and the task's turn answers the same message (it emits
  ``user_task_execution_start``; an order parses it as the first utterance). A route to one of the
  user's workflows creates nothing: the answer says how to start it (``start_task``). A route to
  any other task is refused: nothing is created, the user gets an answer saying so. The chat's own
  answers are texts of ``tasks_config/home_chat/`` (``replies``).

``HomeChatRouter`` sends each runner job to this turn when the message is in a home chat
session and to the platform's usual dispatch otherwise.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import Any, Callable, Mapping

from sqlalchemy import select
from sqlalchemy.orm import Session as DbSession
from sqlalchemy.orm import sessionmaker

from mojodex_core.db import transaction
from mojodex_core.db.models import HomeChat, Message, Session, Task, User, UserProfile, UserTask, UserTaskExecution
from mojodex_core.execution.coalescer import TokenCoalescer
from mojodex_core.execution.dispatch import UnsupportedTaskType
from mojodex_core.execution.events import EventPublisher
from mojodex_core.execution.failures import fail_or_mark, failure_reason
from mojodex_core.execution.history import read_home_chat_conversation
from mojodex_core.execution.jobs import TurnJob
from mojodex_core.execution.prompt import render
from mojodex_core.execution.reasoning import append_trace, trace_entry
from mojodex_core.execution.scheduler import Scheduled, scheduler
from mojodex_core.execution.tool_loop import ToolSettings, describes_tags, offers_native
from mojodex_core.home_chat.replies import home_chat_reply
from mojodex_core.home_chat.routing import ROUTE_FUNCTION, RoutingDecision, route_tool, routing_decision
from mojodex_core.home_chat.service import RoutableTask, available_tasks, home_chat_for_session
from mojodex_core.knowledge import DEFAULT_KNOWLEDGE_TOKENS, knowledge_block, prompt_knowledge
from mojodex_core.languages import language_code
from mojodex_core.llm import LLMNotConfigured, LLMProvider
from mojodex_core.tags import ParsedReply, TagStreamParser

log = logging.getLogger("mojodex.home_chat")

Handler = Callable[[TurnJob, threading.Event], None]
# Prepares an execution just created by routing, in its transaction (an order: its conversation). Raises
# TaskUnavailable when what the task needs is gone (an order's menu): nothing is created, the user is told.
Opener = Callable[[DbSession, UserTaskExecution, Task, str], object]
LABEL = "HOME_CHAT"
TRACE_SOURCE = "HOME_CHAT_ROUTING"
EMPTY_ANSWER = "The assistant returned an empty answer. Please retry."


class HomeChatFailed(Exception):
    """A home chat turn that cannot answer; the message is shown to the user."""


class TaskUnavailable(Exception):
    """Raised by an opener: the routed task cannot start now (e.g. its order's menu is gone)."""


class HomeChatTurn:
    def __init__(
        self,
        factory: sessionmaker[DbSession],
        events: EventPublisher,
        llm: LLMProvider | None,
        task_turns: Callable[[str], Handler | None],
        *,
        openers: Mapping[str, Opener] | None = None,
        tools: ToolSettings | None = None,
        coalesce_ms: int = 30,
        context_tokens: int = 12000,
        knowledge_tokens: int = DEFAULT_KNOWLEDGE_TOKENS,
        tasks_config_dir: Path | None = None,
        turn_timeout_s: float = 180.0,
        max_tokens: int | None = None,
        no_llm_message: str = "No LLM configured.",
    ) -> None:
        self._factory = factory
        self._events = events
        self._llm = llm
        self._task_turns = task_turns  # the turn of a task type (the dispatcher's handler)
        self._openers = dict(openers or {})
        self._tools = tools or ToolSettings()
        self._coalesce_ms = coalesce_ms
        self._context_tokens = context_tokens
        self._knowledge_tokens = knowledge_tokens
        self._tasks_config_dir = tasks_config_dir
        self._turn_timeout_s = turn_timeout_s
        self._max_tokens = max_tokens
        self._no_llm_message = no_llm_message
        # Told (execution pk, session id) when a task is started by routing: the platform names it.
        self.on_routed: Callable[[int, str], object] | None = None

    def __call__(self, job: TurnJob, cancel: threading.Event) -> None:
        execution_pk = self._running_execution(job)
        if execution_pk is not None:
            self._run_task(job, cancel, execution_pk)
            return
        self._free_chat(job, cancel)

    # --- the chat runs a task: the turn of its type answers
    def _running_execution(self, job: TurnJob) -> int | None:
        """The execution that answers this message, attaching the message to it; None for free chat."""
        with transaction(self._factory) as db:
            message = db.get(Message, job.message_pk)
            if message is None:
                return None
            if message.user_task_execution_fk is not None or job.task_tool_execution_pk is not None:
                return message.user_task_execution_fk
            if message.status != "pending":
                return None
            home_chat = home_chat_for_session(db, job.session_id, lock=True)
            running = home_chat.running_user_task_execution_fk if home_chat else None
            if running is None:
                return None
            execution = db.get(UserTaskExecution, running)
            if execution is None or execution.status in ("completed", "deleted"):
                home_chat.running_user_task_execution_fk = None  # done or deleted meanwhile: free chat again
                return None
            message.user_task_execution_fk = running
            return running

    def _run_task(self, job: TurnJob, cancel: threading.Event, execution_pk: int) -> None:
        with self._factory() as db:
            task_type = db.scalar(
                select(Task.type)
                .join(UserTask, UserTask.task_fk == Task.task_pk)
                .join(UserTaskExecution, UserTaskExecution.user_task_fk == UserTask.user_task_pk)
                .where(UserTaskExecution.user_task_execution_pk == execution_pk)
            )
            message_id = db.scalar(select(Message.message_id).where(Message.message_pk == job.message_pk))
        # An execution gone (no type): the instruct turn finds nothing and fails the message, as elsewhere.
        handler = self._task_turns(task_type or "instruct")
        if handler is None:  # a type this process cannot run (never routed to): as the dispatcher fails it
            fail_or_mark(self._factory, self._events, session_id=job.session_id, message_pk=job.message_pk,
                         message_id=message_id, user_task_execution_pk=execution_pk,
                         reason=str(UnsupportedTaskType(task_type)), retryable=False)
            return
        handler(job, cancel)
        with transaction(self._factory) as db:
            execution = db.get(UserTaskExecution, execution_pk)
            home_chat = home_chat_for_session(db, job.session_id, lock=True)
            done = execution is None or execution.status in ("completed", "deleted")
            if home_chat is not None and done and home_chat.running_user_task_execution_fk == execution_pk:
                home_chat.running_user_task_execution_fk = None
                log.info("home chat %s: task execution %s produced its result, back to free chat",
                         home_chat.home_chat_pk, execution_pk)

    # --- free chat
    def _free_chat(self, job: TurnJob, cancel: threading.Event) -> None:
        timed_out = threading.Event()

        def on_timeout() -> None:
            timed_out.set()
            cancel.set()

        watchdog: Scheduled | None = None  # started once the message is claimed
        message_id = None
        routed_pk: int | None = None
        try:
            with transaction(self._factory) as db:
                message = db.get(Message, job.message_pk, with_for_update=True)
                if message is None or message.status != "pending":
                    return  # answered already: never answer twice
                message_id = message.message_id
                llm_messages, tasks, user_id, language = self._prompt(db, job.session_id, message.message_pk)
                message.status = "processing"
            watchdog = scheduler.call_later(self._turn_timeout_s, on_timeout)
            if self._llm is None:
                raise LLMNotConfigured(self._no_llm_message)
            reply, calls = self._generate(job, llm_messages, tasks, cancel)
            decision = routing_decision(reply, calls)
            reasoning = " ".join(reply.captured.get("reasoning", [])) or None
            # The chat answers in the language the user writes in: the model's tag, when it is a language code.
            spoken = language_code(reply.language)
            language = spoken or language
            task = tasks.get(decision.task_name) if decision is not None else None
            if task is not None and task.started_in_chat:
                routed_pk = self._route(job, decision, task, reasoning, reply, spoken, language)
                if routed_pk is None:
                    self._answer(job, self._say(language, "task_unavailable", task=task.name_for_user), reply, spoken)
            elif task is not None:
                log.info("home chat session=%s: %s task %r is started with its form, said how", job.session_id,
                         task.task_type, task.name)
                self._answer(job, self._say(language, "start_from_its_page", task=task.name_for_user), reply,
                             spoken, start_task=task.start_view())
            elif decision is not None:
                log.warning("home chat session=%s: refused a route to %r, not one of user %s's tasks",
                            job.session_id, decision.task_name, user_id)
                self._answer(job, reply.text.strip() or self._say(language, "not_your_task"), reply, spoken)
            else:
                log.info("home chat session=%s answered in free chat: %s", job.session_id,
                         trace_entry(reasoning, [], reply.text)[:200])
                if not reply.text.strip():
                    raise HomeChatFailed(EMPTY_ANSWER)
                self._answer(job, reply.text.strip(), reply, spoken)
        except Exception as exc:  # every failure ends the turn the same visible way
            if timed_out.is_set():
                reason = f"The assistant took too long to answer (over {self._turn_timeout_s:.0f} s). Please retry."
            else:
                reason = failure_reason(exc, shown=(HomeChatFailed,), no_llm=self._no_llm_message,
                                        what="home chat turn", where=f"session={job.session_id}")
            fail_or_mark(self._factory, self._events, session_id=job.session_id, message_pk=job.message_pk,
                         message_id=message_id, user_task_execution_pk=None, reason=reason)
        finally:
            if watchdog is not None:
                watchdog.cancel()
        if routed_pk is not None:
            # Outside the try: the task's turn answers (or fails) the message itself, with its own watchdog.
            self._notify_routed(routed_pk, job.session_id)
            self._run_task(job, cancel, routed_pk)

    def _notify_routed(self, execution_pk: int, session_id: str) -> None:
        if self.on_routed is None:
            return
        try:
            self.on_routed(execution_pk, session_id)
        except Exception:  # naming the execution must never fail the user's turn
            log.exception("could not request the title of execution %s", execution_pk)

    def _say(self, language: str, key: str, **values: str) -> str:
        return home_chat_reply(language, key, tasks_config_dir=self._tasks_config_dir, **values)

    def _prompt(self, db: DbSession, session_id: str, upto_pk: int) -> tuple[list[dict], dict, str, str]:
        session = db.get(Session, session_id)
        user = db.get(User, session.user_id)
        language = session.language or user.language_code
        knowledge = prompt_knowledge(user, db.get(UserProfile, user.user_id), platform=session.platform,
                                     language=language, tasks_config_dir=self._tasks_config_dir)
        tasks = {t.name: t for t in available_tasks(db, user.user_id, language)}
        system = render(
            "home_chat.jinja2",
            knowledge_block=knowledge_block(knowledge, self._knowledge_tokens),
            username=knowledge.username,
            language=language,
            tasks=list(tasks.values()),
            tag_routing=describes_tags(self._tools.mode),
            native_routing=offers_native(self._tools.mode),
        )
        windowed = read_home_chat_conversation(db, session_id, upto_pk, self._context_tokens)
        messages = [{"role": "system", "content": system}] + [{"role": m.role, "content": m.content}
                                                              for m in windowed]
        return messages, tasks, user.user_id, language

    def _generate(
        self, job: TurnJob, messages: list[dict], tasks: dict, cancel: threading.Event
    ) -> tuple[ParsedReply, list[dict]]:
        base = {"session_id": job.session_id, "user_task_execution_pk": None}
        coalescer = TokenCoalescer(
            lambda _channel, text: self._events.publish(job.session_id, "mojo_token", {**base, "delta": text},
                                                        durable=False),
            self._coalesce_ms,
        )
        parser = TagStreamParser()

        def on_token(chunk: str) -> None:
            for delta in parser.feed(chunk):
                if delta.channel == "mojo":
                    coalescer.add("mojo", delta.text)

        tools = [route_tool(sorted(tasks))] if tasks and offers_native(self._tools.mode) else None
        try:
            result = self._llm.chat(messages, label=LABEL, stream=True, on_token=on_token, cancel=cancel,
                                    max_tokens=self._max_tokens, tools=tools)
            calls = list(result.tool_calls or []) if tools else []
            deltas, reply = parser.finish(calls_tools=bool(calls), truncated=result.truncated)
        except BaseException:
            coalescer.discard()
            raise
        if routing_decision(reply, calls) is not None:
            coalescer.discard()  # the task's turn answers instead
        else:
            for delta in deltas:
                if delta.channel == "mojo":
                    coalescer.add("mojo", delta.text)
            coalescer.close()
        return reply, calls

    def _route(self, job: TurnJob, decision: RoutingDecision, task: RoutableTask, reasoning: str | None,
               reply: ParsedReply, spoken: str | None, language: str) -> int | None:
        """The execution created for the routed task; None when its opener found what it needs gone."""
        try:
            with transaction(self._factory) as db:
                home_chat: HomeChat = home_chat_for_session(db, job.session_id, lock=True)
                if not db.scalar(select(UserTask.enabled).where(UserTask.user_task_pk == task.user_task_pk)):
                    # read when the prompt was built: disabled (or removed) while the model decided
                    raise TaskUnavailable("the task was disabled")
                message = db.get(Message, job.message_pk)
                execution = UserTaskExecution(user_task_fk=task.user_task_pk, session_id=job.session_id,
                                              json_input_values={}, status="created")
                db.add(execution)
                db.flush()
                opener = self._openers.get(task.task_type)
                if opener is not None:  # an order: its conversation, in the user's language
                    opener(db, execution, db.get(Task, task.task_pk), language)
                home_chat.running_user_task_execution_fk = execution.user_task_execution_pk
                message.user_task_execution_fk = execution.user_task_execution_pk
                message.status = "pending"  # the task's turn answers it
                if spoken:
                    db.get(Session, job.session_id).language = spoken
                call = {"name": ROUTE_FUNCTION, "arguments": {"task_name": decision.task_name}}
                entry = trace_entry(reasoning, [call], reply.text)
                append_trace(db, execution.user_task_execution_pk, [f"{entry} (routed by {decision.form})"],
                             TRACE_SOURCE)
                execution_pk = execution.user_task_execution_pk
                home_chat_pk = home_chat.home_chat_pk
        except TaskUnavailable as exc:  # rolled back: nothing created, the user is told
            log.warning("home chat session=%s: task %r cannot start: %s", job.session_id, task.name, exc)
            return None
        log.info("home chat %s routed message %s to task %s: execution %s", home_chat_pk,
                 job.message_pk, decision.task_name, execution_pk)
        return execution_pk

    def _answer(self, job: TurnJob, text: str, reply: ParsedReply, spoken: str | None = None, *,
                start_task: dict[str, Any] | None = None) -> None:
        extra = {"start_task": start_task} if start_task is not None else {}
        with self._events.publishing(job.session_id) as publication, transaction(self._factory) as db:
            user_message = db.get(Message, job.message_pk)
            user_message.status = "answered"
            if spoken:
                db.get(Session, job.session_id).language = spoken
            answer = Message(session_id=job.session_id, user_task_execution_fk=None, sender="assistant",
                             event_name="mojo_message", text=text, text_with_tags=reply.text_with_tags,
                             status="final", data={"home_chat": True, **extra})
            db.add(answer)
            db.flush()
            user_message.answer_message_fk = answer.message_pk
            answer.seq = publication.add(db, "mojo_message", {
                "text": text, "message_pk": answer.message_pk, "session_id": job.session_id,
                "user_task_execution_pk": None, "user_message_pk": job.message_pk, "home_chat": True, **extra,
            })


class HomeChatRouter:
    """Runner handler: home chat sessions' messages to the home chat turn, the others to ``default``."""

    MAX_CACHED = 10_000

    def __init__(self, factory: sessionmaker[DbSession], home_chat: Handler, default: Handler) -> None:
        self._factory = factory
        self._home_chat = home_chat
        self._default = default
        self._is_home: dict[str, bool] = {}  # a session is a home chat or not for its whole life
        self._lock = threading.Lock()

    def __call__(self, job: TurnJob, cancel: threading.Event) -> None:
        is_home = self._is_home.get(job.session_id)
        if is_home is None:
            with self._factory() as db:
                is_home = db.scalar(select(HomeChat.home_chat_pk).where(HomeChat.session_id == job.session_id)) \
                    is not None
            with self._lock:
                if len(self._is_home) >= self.MAX_CACHED:
                    self._is_home.clear()
                self._is_home[job.session_id] = is_home
        (self._home_chat if is_home else self._default)(job, cancel)

