"""One assistant turn of an instruct task: its set-up, the streamed LLM call, and its failures.

A turn answers one user message. ``InstructTurn`` runs it in three phases: the set-up, here
(one joined read of everything the prompt needs, the prompt rendered, then the guarded claim
``pending -> processing`` and the execution's start); the LLM reply with the tools it asks for
(``tool_loop``); and the completion, which stores the outcome and sends it (``turn_completion``,
InstructTurn's base class). The outcome is committed to the database before any final event is
published, and a failure leaves the user message in place, marked failed, with an error message
beside it, so the client can retry with the same message_id.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy import and_, bindparam, exists, func, select, true, update
from sqlalchemy.engine import Connection, Row
from sqlalchemy.orm import Session as DbSession
from sqlalchemy.orm import sessionmaker

from mojodex_core.db import guarded_statements
from mojodex_core.db.models import (
    Message,
    ProducedText,
    ProducedTextVersion,
    Session,
    Task,
    TaskToolExecution,
    User,
    UserProfile,
    UserTask,
    UserTaskExecution,
)
from mojodex_core.execution.chaining import previous_task_context
from mojodex_core.execution.events import EventPublisher
from mojodex_core.execution.failures import EXECUTION_DELETED, fail_or_mark, failure_reason, mark_failed
from mojodex_core.execution.history import read_task_conversation
from mojodex_core.execution.jobs import TurnJob
from mojodex_core.execution.prompt import PromptError, instruct_grammar, local_datetime, render
from mojodex_core.execution.scheduler import scheduler
from mojodex_core.execution.session_claims import Superseded
from mojodex_core.execution.task_prompt import TaskPrompt, TaskPrompts
from mojodex_core.execution.tool_loop import (
    ReplyGenerator,
    ToolSettings,
    TurnOutcome,
    TurnRequest,
    describes_tags,
)
from mojodex_core.execution.tool_runs import recorded_uses, resumable
from mojodex_core.execution.turn_completion import TurnCompletion, TurnContext, TurnFailed
from mojodex_core.knowledge import DEFAULT_KNOWLEDGE_TOKENS, knowledge_block, prompt_knowledge
from mojodex_core.llm import LLMNotConfigured, LLMProvider

log = logging.getLogger("mojodex.turn")

_message = Message.__table__
_execution = UserTaskExecution.__table__
_session = Session.__table__
_user_task = UserTask.__table__
_task = Task.__table__
_user = User.__table__
_profile = UserProfile.__table__
_produced = ProducedText.__table__
_version = ProducedTextVersion.__table__
_latest = _version.alias("latest_version")

# Everything a turn reads about its message, in one query (columns, not ORM rows): the message,
# its execution and session, the task's identity (its prompt part is cached per version, see
# task_prompt), the user, the profile, and the execution's latest produced version. Outer joins:
# a message whose execution is gone still comes back (it is then marked failed).
_EXECUTION_COLUMNS = (
    _execution.c.user_task_execution_pk, _execution.c.status.label("execution_status"),
    _execution.c.start_date, _execution.c.json_input_values, _execution.c.parent_user_task_execution_fk,
    _session.c.session_id, _session.c.language.label("session_language"), _session.c.platform,
    _task.c.task_pk, _task.c.updated_at.label("task_updated_at"),
    _user.c.user_id, _user.c.name.label("user_name"), _user.c.language_code, _user.c.timezone_offset_minutes,
    _profile.c.user_id.label("profile_user_id"), _profile.c.name.label("profile_name"),
    _profile.c.language.label("profile_language"), _profile.c.timezone.label("profile_timezone"),
    _profile.c.company_name, _profile.c.company_description, _profile.c.job, _profile.c.about_me,
)


def _around_execution(statement):  # noqa: ANN001, ANN202
    """The execution's side of the context: its session, task, user and profile, outer-joined."""
    return (
        statement
        .outerjoin(_session, _session.c.session_id == _execution.c.session_id)
        .outerjoin(_user_task, _user_task.c.user_task_pk == _execution.c.user_task_fk)
        .outerjoin(_task, _task.c.task_pk == _user_task.c.task_fk)
        .outerjoin(_user, _user.c.user_id == _user_task.c.user_id)
        .outerjoin(_profile, _profile.c.user_id == _user.c.user_id)
    )


# tool_used: a run of the message recorded a tool use (a retry, a follow-up, a resumed crash): only then are
# its uses read (one index probe here, on ix message_fk, whatever failed or answered the message before).
_MESSAGE_COLUMNS = (
    _message.c.status.label("message_status"), _message.c.message_id,
    exists().where(TaskToolExecution.__table__.c.message_fk == _message.c.message_pk).label("tool_used"),
)

# SQLite (no LATERAL): one join of the nine tables.
_CONTEXT = (
    _around_execution(
        select(*_MESSAGE_COLUMNS, *_EXECUTION_COLUMNS,
               _version.c.version_index, _version.c.title.label("version_title"), _version.c.production)
        .select_from(_message)
        .outerjoin(_execution, _execution.c.user_task_execution_pk == _message.c.user_task_execution_fk)
    )
    .outerjoin(_produced, _produced.c.user_task_execution_fk == _execution.c.user_task_execution_pk)
    .outerjoin(_version, and_(
        _version.c.produced_text_fk == _produced.c.produced_text_pk,
        _version.c.version_index == select(func.max(_latest.c.version_index))
        .where(_latest.c.produced_text_fk == _produced.c.produced_text_pk)
        .scalar_subquery(),
    ))
    .where(_message.c.message_pk == bindparam("b_pk"))
)


def _fenced_context():  # noqa: ANN202
    """Postgres: the same row, the execution's side and the latest version each a lateral subquery
    fenced by ``OFFSET 0`` (``LIMIT 1``), so that the planner orders three items, then six tables
    and two apart, instead of nine tables at once, for the same plan (index scans by key, one row).
    Planning the claim took 1.8-2.4 ms joined and 0.8 ms fenced (EXPLAIN, a 2-core VM). Postgres
    plans it at a connection's first ten or so executions (psycopg prepares a statement at its 6th;
    a prepared one is planned anew at each of its first five): 2.4-5.0 ms each in the bench's
    statement log."""
    execution = (
        _around_execution(select(*_EXECUTION_COLUMNS).select_from(_execution))
        .where(_execution.c.user_task_execution_pk == _message.c.user_task_execution_fk)
        .offset(0)
        .lateral("execution_side")
    )
    # One produced text per execution (uq_produced_text_user_task_execution_fk): its newest version.
    latest = (
        select(_version.c.version_index, _version.c.title.label("version_title"), _version.c.production)
        .join(_produced, _produced.c.produced_text_pk == _version.c.produced_text_fk)
        .where(_produced.c.user_task_execution_fk == _message.c.user_task_execution_fk)
        .order_by(_version.c.version_index.desc())
        .limit(1)
        .lateral("latest_version")
    )
    return (
        select(*_MESSAGE_COLUMNS, *execution.c, *latest.c)
        .select_from(_message)
        .outerjoin(execution, true())
        .outerjoin(latest, true())
        .where(_message.c.message_pk == bindparam("b_pk"))
    )


_CONTEXT_FENCED = _fenced_context()
# The turn's writes, guarded: a message is taken from "pending" once (Postgres: the UPDATE waits
# for a concurrent one's commit, then finds the status changed), a tool follow-up takes its
# (answered) message unless another run is processing it.
_CLAIM_PENDING = (
    update(_message)
    .where(_message.c.message_pk == bindparam("b_pk"), _message.c.status == "pending")
    .values(status="processing")
)
# Postgres: the claim made by the context read itself, as a data-modifying CTE (one round trip
# less before the LLM request). The read's columns are those of the statement's snapshot, taken
# before the claim (message_status "pending" for a message it claims); "claimed" tells whether it
# did. A message with no execution is not claimed (_FAIL_ORPHAN fails it).
_CLAIMING = (
    update(_message)
    .where(_message.c.message_pk == bindparam("b_pk"), _message.c.status == "pending",
           _message.c.user_task_execution_fk.is_not(None))
    .values(status="processing")
    .returning(_message.c.message_pk)
    .cte("claimed")
)
_CONTEXT_CLAIMING = _CONTEXT_FENCED.add_columns(exists(select(_CLAIMING.c.message_pk)).label("claimed"))
_CLAIM_RESUMED = (
    update(_message)
    .where(_message.c.message_pk == bindparam("b_pk"), _message.c.status != "processing")
    .values(status="processing")
)
_FAIL_ORPHAN = (
    update(_message)
    .where(_message.c.message_pk == bindparam("b_pk"), _message.c.status == "pending")
    .values(status="failed", error="the task execution does not exist")
)
_START_EXECUTION = (
    update(_execution)
    .where(
        _execution.c.user_task_execution_pk == bindparam("b_pk"),
        _execution.c.start_date.is_(None),
        _execution.c.status != "deleted",
    )
    .values(status="started", start_date=bindparam("b_now", type_=_execution.c.start_date.type))
)


def _now() -> datetime:
    return datetime.now(UTC)


class _NotOurs(Exception):
    """The guarded claim found the message taken (it wrote nothing): answer nothing."""


@dataclass(frozen=True)
class _UserView:
    """The user's columns knowledge.prompt_knowledge reads."""

    name: str
    language_code: str
    timezone_offset_minutes: int


@dataclass(frozen=True)
class _ProfileView:
    """The profile's columns knowledge.prompt_knowledge reads."""

    name: str | None
    language: str | None
    timezone: str | None
    company_name: str | None
    company_description: str | None
    job: str | None
    about_me: str | None


@dataclass(frozen=True)
class _VersionView:
    """The latest produced version as the prompt shows it."""

    version_index: int
    title: str
    production: str


NO_LLM_MESSAGE = (
    "No LLM configured: set MOJODEX_LLM_BASE_URL (an OpenAI-compatible endpoint) or OPENAI_API_KEY, "
    "or install the local model with `make run`."
)


def no_llm_message(reason: str | None) -> str:
    """The users' answer when there is no LLM, naming why when the platform knows."""
    if not reason:
        return NO_LLM_MESSAGE
    return NO_LLM_MESSAGE.replace("No LLM configured:", f"No LLM configured ({reason}):", 1)


def execution_inputs(
    execution: UserTaskExecution, json_input: list[dict], audience: str = "system"
) -> list[dict[str, str]]:
    """The filled inputs, each described for the prompt ("system") or for the user ("user")."""
    values = execution.json_input_values or {}
    keys = ("description_for_system", "description_for_user") if audience == "system" else (
        "description_for_user", "description_for_system")
    described = []
    for spec_input in json_input:
        name = spec_input.get("input_name")
        if name in values and values[name] not in (None, "", []):
            description = spec_input.get(keys[0]) or spec_input.get(keys[1]) or name
            described.append({"name": name, "description": description, "value": values[name]})
    return described


class InstructTurn(TurnCompletion):
    """Callable handed to the runner: runs one turn for a TurnJob (phase 3 inherited, see
    turn_completion)."""

    def __init__(
        self,
        session_factory: sessionmaker[DbSession],
        events: EventPublisher,
        llm: LLMProvider | None,
        *,
        coalesce_ms: int = 30,
        context_tokens: int = 12000,
        use_grammar: bool = False,
        turn_timeout_s: float = 180.0,
        max_tokens: int | None = None,
        no_llm_reason: str | None = None,
        tools: ToolSettings | None = None,
        knowledge_tokens: int = DEFAULT_KNOWLEDGE_TOKENS,
        tasks_config_dir: Path | None = None,
    ) -> None:
        self._factory = session_factory
        self._knowledge_tokens = knowledge_tokens
        self._tasks_config_dir = tasks_config_dir
        self._no_llm_message = no_llm_message(no_llm_reason)
        self._events = events
        self._llm = llm
        self._coalesce_ms = coalesce_ms
        self._context_tokens = context_tokens
        self._use_grammar = use_grammar
        self._turn_timeout_s = turn_timeout_s
        self._max_tokens = max_tokens
        self._tools = tools or ToolSettings()
        self._tasks = TaskPrompts()

    def __call__(self, job: TurnJob, cancel: threading.Event) -> None:
        started = time.monotonic()
        try:
            context = self._begin(job)
        except Exception:  # the message must not stay pending or processing with nothing to answer it
            log.exception("turn set-up failed session=%s message_pk=%s", job.session_id, job.message_pk)
            self._mark_failed(job.message_pk, "The assistant failed to answer because of an internal error.")
            return
        if context is None:
            return
        timed_out = threading.Event()

        def on_timeout() -> None:
            timed_out.set()
            cancel.set()

        watchdog = scheduler.call_later(self._turn_timeout_s, on_timeout)
        try:
            if context.started_now:
                self._events.publish(
                    context.session_id,
                    "user_task_execution_start",
                    {"session_id": context.session_id, "user_task_execution_pk": context.user_task_execution_pk},
                )
            if context.setup_error is not None:
                raise TurnFailed(context.setup_error)
            outcome = self._generate(context, cancel)
            self._complete(context, outcome)
            log.info(
                "turn done session=%s message_pk=%s kind=%s in %.0f ms",
                job.session_id, job.message_pk, "approval" if outcome.approval else outcome.reply.kind,
                (time.monotonic() - started) * 1000,
            )
        except Superseded as exc:  # another worker took the session over: it answers, not this one
            log.warning("turn dropped session=%s message_pk=%s: %s", job.session_id, job.message_pk, exc)
            self._write_trace(context)  # the calls were made: their decisions stay in the trace
        except Exception as exc:  # every failure ends the turn the same visible way
            if timed_out.is_set():
                reason = f"The assistant took too long to answer (over {self._turn_timeout_s:.0f} s). Please retry."
            else:
                reason = failure_reason(exc, shown=(TurnFailed,), no_llm=self._no_llm_message,
                                        where=f"session={job.session_id} message_pk={job.message_pk}")
            self._write_trace(context)
            self._fail_or_mark(context, reason)
        finally:
            watchdog.cancel()

    # --- phase 1: load everything the prompt needs, mark the message as being processed
    def _begin(self, job: TurnJob) -> TurnContext | None:
        # One joined read, the prompt rendered, then the writes, last and guarded: on SQLite the
        # first write takes the database-wide write lock until commit, so writing early would make
        # every other session wait for this one's prompt to render. Each write stands on its own
        # (the claim is guarded by the message's status), so on Postgres they run in autocommit,
        # and the claim of a new message is made by the read itself (no such lock there); a
        # set-up failing after it fails the message visibly, as one failing after a late claim.
        resume = job.task_tool_execution_pk
        try:
            with guarded_statements(self._factory) as db:
                return self._claim(db, job, resume)
        except _NotOurs:
            return None

    def _claim(self, db: Connection, job: TurnJob, resume: int | None) -> TurnContext | None:
        # Postgres claims a new message in the read (_CONTEXT_CLAIMING); SQLite claims last, see _begin.
        postgres = db.dialect.name == "postgresql"
        claiming = resume is None and postgres
        context = _CONTEXT_CLAIMING if claiming else _CONTEXT_FENCED if postgres else _CONTEXT
        found = db.execute(context, {"b_pk": job.message_pk}).first()
        if found is None:
            return None
        if resume is not None:
            if not resumable(db, resume, job.message_pk):
                return None  # this tool decision was followed up already
        elif found.message_status != "pending":
            return None  # answered already, or not ours to answer: never answer twice
        elif claiming and not found.claimed and found.user_task_execution_pk is not None:
            return None  # another run took it since the statement's snapshot
        if found.user_task_execution_pk is None:
            db.execute(_FAIL_ORPHAN, {"b_pk": job.message_pk})
            return None
        task = self._tasks.get(db, found.task_pk, found.task_updated_at)
        setup_error = None
        try:
            if found.execution_status == "deleted":
                raise TurnFailed(EXECUTION_DELETED)
            llm_messages = self._llm_messages(db, found, task, job.message_pk)
            # A retry or a follow-up goes on from the tools its message used; a new message (the hot path) reads none.
            recorded = recorded_uses(db, job.message_pk) if found.tool_used else []
        except Exception as exc:
            # Raising here would roll the message back to pending with no turn left to answer
            # it, and the client would wait forever: commit "processing", then fail it visibly.
            if not isinstance(exc, TurnFailed):
                log.exception("turn setup failed session=%s message_pk=%s", job.session_id, job.message_pk)
            llm_messages, recorded = [], []
            if isinstance(exc, TurnFailed):
                setup_error = str(exc)
            elif isinstance(exc, PromptError):
                setup_error = (
                    "The assistant could not prepare its prompt (a template failed to render). Please retry."
                )
            else:
                setup_error = "The assistant failed to answer because of an internal error. Please retry."
        context = TurnContext(
            session_id=found.session_id,
            message_pk=job.message_pk,
            message_id=found.message_id,
            user_task_execution_pk=found.user_task_execution_pk,
            user_id=found.user_id,
            llm_messages=llm_messages,
            output_text_type_fk=task.output_text_type_fk,
            output_text_type=task.output_text_type,
            setup_error=setup_error,
            tools=list(task.tools),
            resume_tool_execution_pk=resume,
            recorded_uses=recorded,
            session_language=found.session_language,
            completes_execution=task.type != "workflow",
        )
        if not claiming:
            claimed = db.execute(_CLAIM_PENDING if resume is None else _CLAIM_RESUMED, {"b_pk": job.message_pk})
            if claimed.rowcount != 1:
                raise _NotOurs(job.message_pk)  # another run took it since the read
        if found.start_date is None and found.execution_status != "deleted":
            started = db.execute(_START_EXECUTION, {"b_pk": context.user_task_execution_pk, "b_now": _now()})
            context.started_now = started.rowcount == 1
        return context

    def _llm_messages(self, db: Connection, found: Row, task: TaskPrompt, upto_pk: int) -> list[dict[str, str]]:
        now = _now()
        language = found.session_language or found.language_code
        displayed = task.displayed_for(language)
        user = _UserView(found.user_name, found.language_code, found.timezone_offset_minutes)
        profile = None
        if found.profile_user_id is not None:
            profile = _ProfileView(found.profile_name, found.profile_language, found.profile_timezone,
                                   found.company_name, found.company_description, found.job, found.about_me)
        latest = None
        if found.version_index is not None:
            latest = _VersionView(found.version_index, found.version_title, found.production)
        knowledge = prompt_knowledge(
            user, profile, platform=found.platform, language=language,  # type: ignore[arg-type]
            tasks_config_dir=self._tasks_config_dir, now=now,
        )
        system = render(
            "instruct_task.jinja2",
            knowledge_block=knowledge_block(knowledge, self._knowledge_tokens),
            username=knowledge.username,
            language=language,
            local_datetime=local_datetime(found.timezone_offset_minutes, now),
            task=task,
            inputs=execution_inputs(found, displayed.json_input if displayed else []),  # type: ignore[arg-type]
            infos_to_extract=task.infos_to_extract or [],
            produced_text=latest,
            # Task chaining: the parent's result and the action's message_prefix, or None.
            previous_task=previous_task_context(
                db, found.parent_user_task_execution_fk, task.name_for_system, language, self._tasks
            ),
            tools=[] if self._use_grammar else task.prompt_tools(),
            tag_tools=describes_tags(self._tools.mode),
        )
        windowed = read_task_conversation(db, found.session_id, found.user_task_execution_pk, upto_pk,
                                          self._context_tokens)
        return [{"role": "system", "content": system}] + [{"role": m.role, "content": m.content} for m in windowed]

    # --- phase 2: stream the LLM reply, running the tools it asks for (see tool_loop)
    def _generate(self, context: TurnContext, cancel: threading.Event) -> TurnOutcome:
        if self._llm is None:
            raise LLMNotConfigured(self._no_llm_message)
        generator = ReplyGenerator(
            self._factory, self._events, self._llm, self._tools, coalesce_ms=self._coalesce_ms,
            grammar=instruct_grammar() if self._use_grammar else None, max_tokens=self._max_tokens,
        )
        return generator.generate(
            TurnRequest(
                session_id=context.session_id, user_task_execution_pk=context.user_task_execution_pk,
                user_id=context.user_id, message_pk=context.message_pk, llm_messages=context.llm_messages,
                tools=context.tools, resume_tool_execution_pk=context.resume_tool_execution_pk,
                recorded_uses=tuple(context.recorded_uses),
            ),
            cancel,
            trace=context.trace,
        )

    def _fail_or_mark(self, context: TurnContext, reason: str) -> None:
        fail_or_mark(
            self._factory, self._events, session_id=context.session_id, message_pk=context.message_pk,
            message_id=context.message_id, user_task_execution_pk=context.user_task_execution_pk, reason=reason,
        )

    def _mark_failed(self, message_pk: int, reason: str) -> None:
        mark_failed(self._factory, message_pk, reason)
