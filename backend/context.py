"""The platform's long-lived parts, built once per process and reachable from routes."""

from __future__ import annotations

import logging
import os
import threading
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Iterator

from flask import current_app
from sqlalchemy.engine import Engine
from sqlalchemy.exc import OperationalError
from sqlalchemy.orm import Session as DbSession
from sqlalchemy.orm import sessionmaker

from background.jobs import JobHandler, JobRunner, ThreadJobRunner
from background.runner import ThreadTurnRunner, TurnRunner
from mojodex_core.audio.databases import register, sweep_if_alone
from mojodex_core.audio.store import AudioStore
from mojodex_core.audio.transcription import AudioConfig, OpenAISpeech
from mojodex_core.audio.transcription import OpenAITranscriber as AudioMessageTranscriber
from mojodex_core.audio.turn import TranscribingHandler
from mojodex_core.config import Settings, webhook_secret
from mojodex_core.db import database_key, make_engine, make_session_factory, transaction
from mojodex_core.execution.dispatch import TurnDispatcher
from mojodex_core.execution.events import SessionEventLog
from mojodex_core.execution.jobs import SessionJob, SessionJobs
from mojodex_core.execution.llm_call_spool import llm_call_spool_dir
from mojodex_core.execution.llm_calls import DbLLMCallRecorder, SpooledLLMCallRecorder
from mojodex_core.execution.message_dispatch import MessageKindDispatcher
from mojodex_core.execution.title_summary import (
    TitleSummaryJob,
    TitleSummaryWriter,
    claim_title_summary,
    unfinished_jobs,
)
from mojodex_core.execution.tool_loop import ToolSettings
from mojodex_core.execution.turn import InstructTurn, no_llm_message
from mojodex_core.home_chat.order_opener import order_opener
from mojodex_core.home_chat.turn import HomeChatRouter, HomeChatTurn
from mojodex_core.knowledge import DEFAULT_KNOWLEDGE_TOKENS
from mojodex_core.llm import LLMProvider, LLMSettings, ServerGuard
from mojodex_core.llm.provider import Recorder
from mojodex_core.order_runtime.menus import MenuCatalog
from mojodex_core.order_runtime.store import LiveStateStore, build_store
from mojodex_core.order_runtime.tickets import TicketDelivery
from mojodex_core.order_runtime.turn import OrderTurn
from mojodex_core.push.notifiers import build_notifier, push_config
from mojodex_core.push.presence import LocalPresence, Presence
from mojodex_core.push.redis_presence import RedisPresence
from mojodex_core.push.service import PushOnFinalReplies
from mojodex_core.text_edit.turn import EVENT_NAME as TEXT_EDIT_EVENT
from mojodex_core.text_edit.turn import TextEditTurn
from mojodex_core.timezones import warm_zone_names
from mojodex_core.workflow.heartbeat import Heartbeat
from mojodex_core.workflow.lapse import lapsed_step, submit_rerun
from mojodex_core.workflow.review import ReviewTurn
from mojodex_core.workflow.runner import WorkflowTurn
from mojodex_core.workflow.transcription import OpenAITranscriber

log = logging.getLogger("mojodex.platform")


@dataclass
class Platform:
    settings: Settings
    engine: Engine
    session_factory: sessionmaker[DbSession]
    events: SessionEventLog
    runner: TurnRunner
    llm: LLMProvider | None
    # The embedded local model server, when this process runs one (its status goes in /health).
    local_model: object | None = None
    dispatcher: TurnDispatcher | None = None
    menus: MenuCatalog | None = None
    order_store: LiveStateStore | None = None
    tickets: TicketDelivery | None = None
    # Background jobs (title and summary); None when there is no LLM or they are turned off.
    jobs: JobRunner | None = None
    # Set by close(): background loops of this platform (e.g. the socket token check) end.
    stopping: threading.Event = field(default_factory=threading.Event)
    # What the runner calls for each job: turns by message kind and task type, session jobs by kind
    # (register more with ``turn_handler.register``); workers call it directly in distributed mode.
    turn_handler: SessionJobs | None = None
    job_handlers: dict[type, JobHandler] = field(default_factory=dict)

    def submit_session_job(self, session_id: str, kind: str, payload: dict | None = None) -> None:
        """Runs ``kind``'s handler for the session in its turn order, in-process or on a worker.

        Register the handler first on every process that runs jobs (backends and workers):
        ``platform.turn_handler.register(kind, handler)``; ``payload`` must be JSON-able. Raises
        JobRefused when the runner cannot take it (nothing would run it later)."""
        if self.turn_handler is None or not self.turn_handler.handles(kind):
            raise LookupError(f"no session job handler for kind {kind!r}")
        self.runner.submit(SessionJob(session_id=session_id, kind=kind, payload=payload or {}))
    # Workflow steps: the heartbeat of running steps and the watch for lapsed ones (started by create_app).
    heartbeat: Heartbeat | None = None
    # Audio messages: limits and transcription endpoint, and where uploads wait to be transcribed.
    audio: AudioConfig | None = None
    audio_store: AudioStore | None = None
    transcribing: TranscribingHandler | None = None
    # Voice replies (GET /voice), when a speech model is configured.
    speech: OpenAISpeech | None = None
    # Push notifications of final replies to users with no open socket.
    push: PushOnFinalReplies | None = None
    # The llm_call rows, written after the answer in batches (spooled, replayed after a crash).
    llm_calls: SpooledLLMCallRecorder | None = None
    # Executions whose title job is known to be claimed (title_status never goes back to NULL):
    # later inputs skip the claim, a write transaction that would change nothing.
    _titled: set[int] = field(default_factory=set, repr=False)

    @contextmanager
    def db(self) -> Iterator[DbSession]:
        """A transaction: committed when the block ends, rolled back on error."""
        with transaction(self.session_factory) as session:
            yield session

    def flush_llm_calls(self) -> None:
        """Stores this process's queued llm_call rows now: readers that must see the calls of a turn
        just answered (GET /usage) call it first. Cheap when none wait; never raises."""
        if self.llm_calls is not None:
            self.llm_calls.flush()

    def request_title_summary(self, user_task_execution_pk: int, session_id: str) -> bool:
        """After an accepted input: submits the title/summary job the first time only (never awaited)."""
        if self.jobs is None or user_task_execution_pk in self._titled:
            return False
        with self.db() as db:
            claimed = claim_title_summary(db, user_task_execution_pk)
        if len(self._titled) >= 100_000:
            self._titled.clear()  # a cache: an execution dropped from it costs one claim again
        self._titled.add(user_task_execution_pk)
        if claimed:
            self.jobs.submit(TitleSummaryJob(user_task_execution_pk=user_task_execution_pk, session_id=session_id))
        return claimed

    def resume_title_summaries(self) -> int:
        """At start-up: jobs claimed before a restart but never finished are submitted again."""
        if self.jobs is None:
            return 0
        try:
            with self.db() as db:
                jobs = unfinished_jobs(db)
        except OperationalError as exc:  # the database is down: the server must still start
            log.error("could not resume title jobs (%s)", type(exc).__name__)
            return 0
        for job in jobs:
            self.jobs.submit(job)
        if jobs:
            log.info("resumed %d title job(s)", len(jobs))
        return len(jobs)

    def sweep_audio_orphans(self) -> int:
        """After start-up: the uploads no message names, older than the grace, deleted when the folder is this
        database's alone (mojodex_core/audio/databases.py ``sweep_if_alone``). Never raises."""
        if self.audio_store is None:
            return 0
        return sweep_if_alone(self.audio_store, self.session_factory, database_key(self.settings.database_url),
                              self.settings.audio_orphan_grace_s)

    def start_workflow_watch(self) -> None:
        """Renews the heartbeat of this process' running steps; re-runs steps of dead processes once."""
        if self.heartbeat is None:
            return

        def on_lapsed(session_id: str, execution_pk: int, step_pk: int, rerun: bool, cutoff: datetime) -> bool:
            marked, message_pk = lapsed_step(self.session_factory, self.events, session_id, execution_pk, step_pk,
                                             rerun, cutoff)
            if message_pk is not None:
                submit_rerun(self.session_factory, self.events, self.runner.submit, session_id, execution_pk,
                             step_pk, message_pk, stopping=self.heartbeat.stopping)
            return marked

        self.heartbeat.start(on_lapsed)

    def quit_jobs(self) -> None:
        """The serving process is quitting (gunicorn's worker_exit): the background job in flight
        has its LLM call cancelled and stays claimed for the next start, instead of holding the
        process's exit (a title on the local model takes tens of seconds; gunicorn's master killed
        the worker after 30 s). Turns in flight go on: the process waits for them, as before."""
        if self.jobs is not None:
            self.jobs.shutdown(wait=False)  # first: a job cancelled before it would be retried
        self.stopping.set()

    def close(self) -> None:
        self.quit_jobs()
        if self.heartbeat is not None:
            self.heartbeat.stop()
        self.runner.shutdown(wait=False)
        if self.tickets is not None:
            self.tickets.shutdown()
        close_store = getattr(self.order_store, "close", None)
        if close_store is not None:
            close_store()
        if self.push is not None:
            self.push.shutdown()
        if self.llm is not None:
            self.llm.close()
        if self.llm_calls is not None:
            self.llm_calls.close()  # stores the queued rows; what it cannot store waits in the spool
        self.engine.dispose()


def build_llm(
    settings: Settings,
    session_factory: sessionmaker[DbSession],
    guard: ServerGuard | None = None,
    *,
    recorder: Recorder | None = None,
    **overrides: object,
) -> LLMProvider | None:
    """``recorder``: what stores each call's llm_call row (the platform's spooled recorder);
    one transaction per call when not given."""
    if not settings.llm.configured:
        log.warning("no LLM configured: instruct turns will answer with a 'no LLM configured' error")
        return None
    return LLMProvider(
        LLMSettings(
            base_url=settings.llm.base_url,
            api_key=settings.llm.api_key or "not-needed",
            model=settings.llm.model,
            fallback_model=settings.llm.fallback_model,
            timeout_s=settings.llm.timeout_s,
            max_retries=settings.llm.max_retries,
            **({"structured_mode": settings.extra["structured_mode"]} if "structured_mode" in settings.extra else {}),
            **overrides,
        ),
        recorder=recorder if recorder is not None else DbLLMCallRecorder(session_factory),
        guard=guard,
    )


def build_platform(
    settings: Settings,
    *,
    llm_overrides: dict | None = None,
    local_model: object | None = None,
    no_llm_reason: str | None = None,
) -> Platform:
    """``local_model``: the embedded model server (a ServerGuard with ``status()``), if one runs;
    ``no_llm_reason``: why there is no LLM, added to the users' "No LLM configured" answer."""
    warm_zone_names()  # the app's and the Celery worker's start-up, not a request's first profile save
    engine = make_engine(settings.database_url, pool_size=settings.db_pool_size, max_overflow=settings.db_max_overflow)
    factory = make_session_factory(engine)
    redis_client = None
    if settings.distributed:
        import redis

        from background.distributed.events import RedisSessionEventLog

        redis_client = redis.Redis.from_url(settings.redis_url, socket_timeout=10, socket_connect_timeout=5)
        events = RedisSessionEventLog(factory, redis_client, token_ttl_s=settings.token_stream_ttl_s)
        # Backends hold the sockets, workers publish the final replies: who is online is shared.
        presence: Presence = RedisPresence.from_url(settings.redis_url, ttl_s=settings.presence_ttl_s)
    else:
        events = SessionEventLog(factory)
        presence = LocalPresence()
    # Built with or without an LLM: its first act replays the spool files of stopped processes.
    llm_calls = SpooledLLMCallRecorder(engine, llm_call_spool_dir(settings.var_dir, settings.database_url))
    llm = build_llm(settings, factory, local_model, recorder=llm_calls, **(llm_overrides or {}))
    turn = InstructTurn(
        factory,
        events,
        llm,
        coalesce_ms=settings.token_coalesce_ms,
        use_grammar=settings.extra.get("use_grammar", False),
        turn_timeout_s=settings.turn_timeout_s,
        max_tokens=settings.extra.get("max_tokens"),
        no_llm_reason=no_llm_reason,
        tools=ToolSettings(
            mode=settings.tool_mode, max_calls=settings.tool_max_calls, timeout_s=settings.tool_timeout_s
        ),
        knowledge_tokens=settings.extra.get("knowledge_tokens", DEFAULT_KNOWLEDGE_TOKENS),
        tasks_config_dir=settings.tasks_config_dir,
    )
    dispatcher = TurnDispatcher(factory, events)
    dispatcher.register("instruct", turn)
    menus = MenuCatalog(settings.tasks_config_dir)
    store = build_store(settings.redis_url, settings.order_state_ttl_s)
    tickets = TicketDelivery(
        factory,
        webhook_secret(settings),
        attempts=settings.pos_webhook_attempts,
        backoff_s=settings.pos_webhook_backoff_s,
        timeout_s=settings.pos_webhook_timeout_s,
    )
    dispatcher.register("order", OrderTurn(factory, events, llm, store, menus, tickets))
    heartbeat = Heartbeat(
        factory, interval_s=settings.workflow_heartbeat_s, lapse_s=settings.workflow_heartbeat_lapse_s
    )
    dispatcher.register("workflow", build_workflow_turn(settings, factory, events, llm, heartbeat, turn))
    text_edit = TextEditTurn(
        factory, events, llm, coalesce_ms=settings.token_coalesce_ms, turn_timeout_s=settings.turn_timeout_s,
        max_tokens=settings.extra.get("max_tokens"),
    )

    # Text edits answer user messages too, on the same per-session runner as turns; every other message goes
    # to its task type's turn, a home chat session's to the home chat turn first (free chat, routing, its task).
    home_chat = HomeChatTurn(
        factory, events, llm, dispatcher.handler, openers={"order": order_opener(menus, store)},
        tools=ToolSettings(mode=settings.tool_mode), coalesce_ms=settings.token_coalesce_ms,
        knowledge_tokens=settings.extra.get("knowledge_tokens", DEFAULT_KNOWLEDGE_TOKENS),
        tasks_config_dir=settings.tasks_config_dir, turn_timeout_s=settings.turn_timeout_s,
        max_tokens=settings.extra.get("max_tokens"), no_llm_message=no_llm_message(no_llm_reason),
    )
    audio = AudioConfig.from_settings(settings)
    audio_store = AudioStore(audio.directory)
    # Before it serves: the sweep deletes only in a folder whose registry lists this database alone.
    register(audio_store.directory, database_key(settings.database_url))
    # Audio messages are transcribed first, on the runner (off the request thread, in session order).
    transcribing = TranscribingHandler(
        factory, events, AudioMessageTranscriber(audio) if audio.configured else None, audio_store,
        MessageKindDispatcher(factory, HomeChatRouter(factory, home_chat, dispatcher), {TEXT_EDIT_EVENT: text_edit}),
    )
    handler = SessionJobs(transcribing)
    stopping = threading.Event()
    # A Celery worker's jobs are retried by Celery and handed back at its shutdown: nothing to cancel.
    handlers = job_handlers(settings, factory, events, llm, None if settings.distributed else stopping)
    if settings.distributed:
        from background.distributed.celery_app import make_celery
        from background.distributed.runner import CeleryJobRunner, CeleryTurnRunner

        celery = make_celery(settings)
        runner: TurnRunner = CeleryTurnRunner(celery, redis_client, factory)
        jobs: JobRunner | None = CeleryJobRunner(celery) if handlers else None
        log.info("runner: celery (broker %s)", settings.redis_url.split("@")[-1])
    else:
        runner = ThreadTurnRunner(handler)
        jobs = thread_jobs(settings, handlers)
    log.info("order live state: %s", store.name)
    platform = Platform(
        settings=settings, engine=engine, session_factory=factory, events=events, runner=runner, llm=llm,
        dispatcher=dispatcher, menus=menus, order_store=store, tickets=tickets, local_model=local_model,
        jobs=jobs, turn_handler=handler, job_handlers=handlers, heartbeat=heartbeat, audio=audio,
        audio_store=audio_store, transcribing=transcribing,
        speech=OpenAISpeech(audio) if audio.speech_model else None,
        push=PushOnFinalReplies(factory, presence, build_notifier(push_config(settings.extra, os.environ))),
        llm_calls=llm_calls, stopping=stopping,
    )
    # Executions started by home chat routing, and tasks' audio messages once transcribed, get named too.
    home_chat.on_routed = platform.request_title_summary
    transcribing.on_transcribed = platform.request_title_summary
    return platform


def build_workflow_turn(
    settings: Settings, factory: sessionmaker[DbSession], events: SessionEventLog, llm: LLMProvider | None,
    heartbeat: Heartbeat, result_chat: InstructTurn,
) -> WorkflowTurn:
    transcriber = None
    if settings.transcription_base_url:
        transcriber = OpenAITranscriber(
            base_url=settings.transcription_base_url.rstrip("/"), api_key=settings.transcription_api_key or "",
            model=settings.transcription_model,
        )
    max_tokens = settings.extra.get("max_tokens")
    workflow = WorkflowTurn(factory, events, llm, heartbeat, transcriber=transcriber, result_chat=result_chat,
                            max_tokens=max_tokens)
    workflow.set_review(ReviewTurn(factory, events, llm, workflow, max_tokens=max_tokens))
    return workflow


def job_handlers(
    settings: Settings, factory: sessionmaker[DbSession], events: object, llm: LLMProvider | None,
    stopping: threading.Event | None = None,
) -> dict[type, JobHandler]:
    """The background jobs' handlers; none without an LLM or with ``extra["title_summary_jobs"]`` False.
    ``stopping``: the process's (``Platform.stopping``), which cancels a job's LLM call in flight."""
    if llm is None or not settings.extra.get("title_summary_jobs", True):
        return {}
    return {TitleSummaryJob: TitleSummaryWriter(factory, events, llm, stopping)}


def build_jobs(
    settings: Settings, factory: sessionmaker[DbSession], events: object, llm: LLMProvider | None
) -> JobRunner | None:
    """The in-process title/summary job runner; none without an LLM or with the jobs turned off."""
    return thread_jobs(settings, job_handlers(settings, factory, events, llm))


def thread_jobs(settings: Settings, handlers: dict[type, JobHandler]) -> JobRunner | None:
    """The in-process job runner for ``handlers`` (None when there are none)."""
    if not handlers:
        return None
    return ThreadJobRunner(
        handlers,
        max_attempts=settings.extra.get("job_max_attempts", 3),
        backoff_base_s=settings.extra.get("job_backoff_s", 2.0),
    )


def platform() -> Platform:
    return current_app.extensions["mojodex"]
