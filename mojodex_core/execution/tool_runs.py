"""Running tools and recording each use: task_tool_execution + its task_tool_query rows.

Every use is recorded, failed ones included (unknown tool, invalid query, timeout, exception):
the error becomes the result the model reads, and a log line says what happened. The turn
goes on either way.
"""

from __future__ import annotations

import json
import logging
import threading
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import jsonschema
from sqlalchemy import bindparam, case, insert, select, update
from sqlalchemy.engine import Connection
from sqlalchemy.orm import Session as DbSession
from sqlalchemy.orm import sessionmaker

from mojodex_core.db import transaction
from mojodex_core.db.models import Message, TaskToolExecution, TaskToolQuery, UserTask, UserTaskExecution
from mojodex_core.execution.session_claims import Superseded
from mojodex_core.execution.tool_requests import RecordedUse, ToolRequest
from mojodex_core.tools import ToolContext, ToolError, get_tool

log = logging.getLogger("mojodex.tools")

DECLINED_RESULT = {"error": "The user declined this tool call. Do not ask for it again; answer without it."}


class DecisionTakenBack(Superseded):
    """A follow-up turn whose decision was taken back (``undo_decision``) after its claim: it answers nothing."""


def _now() -> datetime:
    return datetime.now(UTC)


def _error(message: str) -> dict[str, Any]:
    return {"error": message}


def check_request(request: ToolRequest, task_tools: dict[str, dict[str, Any]]) -> str | None:
    """Why the request cannot run (unknown tool, invalid query), or None. Pure."""
    if request.name not in task_tools or get_tool(request.name) is None:
        offered = ", ".join(sorted(n for n in task_tools if get_tool(n) is not None)) or "none"
        if request.name in task_tools:  # the spec lists it, but this server has no such tool
            return f"the tool {request.name!r} is not installed on this server (tools of this task: {offered})"
        return f"unknown tool {request.name!r} (tools of this task: {offered})"
    if request.query_error:
        return f"invalid query for {request.name}: {request.query_error}"
    tool = get_tool(request.name)
    try:
        jsonschema.validate(request.query, tool.query_schema)
    except jsonschema.ValidationError as exc:
        where = "/".join(str(p) for p in exc.absolute_path) or "query"
        return f"invalid query for {request.name}: {where}: {exc.message}"
    return None


def _run_bounded(request: ToolRequest, context: ToolContext) -> dict[str, Any]:
    """Run the tool on a thread, waiting at most context.timeout_s; errors become results."""
    tool = get_tool(request.name)
    outcome: dict[str, Any] = {}

    def target() -> None:
        try:
            outcome["result"] = tool.run(request.query, context)
        except ToolError as exc:
            outcome["error"] = str(exc)
        except Exception as exc:  # a tool bug must not end the turn
            log.exception("tool %s crashed", request.name)
            outcome["error"] = f"the tool failed: {type(exc).__name__}: {exc}"

    worker = threading.Thread(target=target, name=f"tool-{request.name}", daemon=True)
    worker.start()
    worker.join(context.timeout_s)
    if worker.is_alive():  # it keeps running detached; its result is ignored
        return _error(f"the tool {request.name} timed out after {context.timeout_s:g} s")
    if "error" in outcome:
        return _error(outcome["error"])
    result = outcome.get("result")
    result = result if isinstance(result, dict) else {"result": result}
    try:
        # Stored in a JSON column and sent to the model as JSON: NaN is refused too (Postgres rejects it).
        json.dumps(result, allow_nan=False)
    except (TypeError, ValueError) as exc:  # a tool bug: told to the model, the turn goes on
        log.error("tool %s returned a result that is not JSON: %s", request.name, exc)
        return _error(f"the tool returned a result that is not JSON ({exc})")
    return result


@dataclass
class ToolRuns:
    session_factory: sessionmaker[DbSession]
    timeout_s: float = 10.0

    def context(self, tool_spec: dict[str, Any], user_id: str, user_task_execution_pk: int) -> ToolContext:
        config = dict(tool_spec.get("config") or {})
        # An admin may set a tool's own timeout in its config; otherwise MOJODEX_TOOL_TIMEOUT_S.
        timeout = float(config["timeout_s"]) if config.get("timeout_s") else self.timeout_s
        return ToolContext(user_id, user_task_execution_pk, self.session_factory, config, timeout)

    def run(
        self, request: ToolRequest, task_tools: dict[str, dict[str, Any]], *, user_id: str,
        user_task_execution_pk: int, message_pk: int, refused: str | None = None,
    ) -> dict[str, Any]:
        """Check, record, run and record the result of one request; returns what the model is told.
        ``refused``: why the caller does not let it run (recorded as a failed use, like a bad request)."""
        problem = refused or check_request(request, task_tools)
        with transaction(self.session_factory) as db:
            execution = TaskToolExecution(
                user_task_execution_fk=user_task_execution_pk, tool_name=request.name[:64] or "?",
                status="failed" if problem else "running", explanation=request.explanation or None,
                call_id=request.call_id, message_fk=message_pk, error=problem,
            )
            db.add(execution)
            db.flush()
            query = TaskToolQuery(task_tool_execution_fk=execution.task_tool_execution_pk,
                                  query=request.stored_query())
            db.add(query)
            db.flush()
            execution_pk, query_pk = execution.task_tool_execution_pk, query.task_tool_query_pk
        if problem:
            result = _error(problem)
            self._finish(execution_pk, query_pk, result, problem)
            log.warning("tool request refused execution=%s: %s", user_task_execution_pk, problem)
            return result
        return self.execute(execution_pk, query_pk, request, task_tools[request.name], user_id,
                            user_task_execution_pk)

    def execute(
        self, execution_pk: int, query_pk: int, request: ToolRequest, tool_spec: dict[str, Any], user_id: str,
        user_task_execution_pk: int,
    ) -> dict[str, Any]:
        try:
            context = self.context(tool_spec, user_id, user_task_execution_pk)
        except (TypeError, ValueError) as exc:  # a config stored before specs were checked for it
            log.error("tool %s of execution=%s has a config it cannot run with: %s", request.name,
                      user_task_execution_pk, exc)
            result = _error(f"the tool {request.name} could not run: its configuration is invalid ({exc})")
        else:
            result = _run_bounded(request, context)
        error = result.get("error") if set(result) == {"error"} else None
        self._finish(execution_pk, query_pk, result, error)
        if error:
            log.warning("tool %s failed execution=%s: %s", request.name, user_task_execution_pk, error)
        else:
            log.info("tool %s ran execution=%s task_tool_execution=%s", request.name, user_task_execution_pk,
                     execution_pk)
        return result

    def _finish(self, execution_pk: int, query_pk: int, result: dict[str, Any], error: str | None,
                status: str | None = None) -> None:
        with transaction(self.session_factory) as db:
            execution = db.get(TaskToolExecution, execution_pk)
            execution.status = status or ("failed" if error else "done")
            execution.error = error
            query = db.get(TaskToolQuery, query_pk)
            query.result = result
            query.result_date = _now()

    # --- approval

    def resume(self, execution_pk: int, task_tools: dict[str, dict[str, Any]], user_id: str
               ) -> tuple[ToolRequest, dict[str, Any]]:
        """Run (approved) or decline the decided tool; returns the request as asked and its result.

        The decision is taken by a conditional update (approved -> running, declined kept, in the transaction
        that records the declined result), not as the turn's claim read it: a decision taken back since
        (``undo_decision``, its follow-up refused elsewhere) matches nothing, and the follow-up gives up as a
        superseded turn (``DecisionTakenBack``), its message answered again as it was: never a declined result
        for a use that awaits the user's decision."""
        with transaction(self.session_factory) as db:
            taken = db.execute(_TAKE_DECISION, {"b_pk": execution_pk}).rowcount
            execution = db.get(TaskToolExecution, execution_pk)
            if not taken:
                db.execute(_GIVE_BACK_MESSAGE, {"b_pk": execution.message_fk})
            else:
                query = db.scalar(select(TaskToolQuery).where(TaskToolQuery.task_tool_execution_fk == execution_pk)
                                  .order_by(TaskToolQuery.task_tool_query_pk))
                request = ToolRequest(name=execution.tool_name, query=query.query,
                                      explanation=execution.explanation or "", call_id=execution.call_id)
                approved, query_pk = execution.status == "running", query.task_tool_query_pk
                ute_pk = execution.user_task_execution_fk
                if not approved:  # recorded with the decision taken: nothing takes it back in between
                    execution.error = None
                    query.result, query.result_date = DECLINED_RESULT, _now()
        if not taken:  # raised once committed, the message given back
            raise DecisionTakenBack(f"the decision on task_tool_execution {execution_pk} was taken back")
        if not approved:
            log.info("tool %s declined by the user, task_tool_execution=%s", request.name, execution_pk)
            return request, DECLINED_RESULT
        # Checked again: the task's tools (or this server's) may have changed since the user was asked.
        problem = check_request(request, task_tools)
        if problem:
            result = _error(problem)
            self._finish(execution_pk, query_pk, result, problem)
            log.warning("approved tool request refused execution=%s: %s", ute_pk, problem)
            return request, result
        return request, self.execute(execution_pk, query_pk, request, task_tools[request.name], user_id, ute_pk)


_DECISION = select(TaskToolExecution.message_fk, TaskToolExecution.status).where(
    TaskToolExecution.task_tool_execution_pk == bindparam("b_pk")
)
_RESULTS = select(TaskToolQuery.result).where(TaskToolQuery.task_tool_execution_fk == bindparam("b_pk"))
_EXECUTION_LOCKED = select(TaskToolExecution.status).where(
    TaskToolExecution.task_tool_execution_pk == bindparam("b_pk")
).with_for_update()
# The decision a follow-up takes (see ToolRuns.resume); the row stays locked until its transaction ends.
_TAKE_DECISION = (
    update(TaskToolExecution)
    .where(TaskToolExecution.task_tool_execution_pk == bindparam("b_pk"),
           TaskToolExecution.status.in_(("approved", "declined")))
    .values(status=case((TaskToolExecution.status == "approved", "running"), else_=TaskToolExecution.status))
    .execution_options(synchronize_session=False)
)
# A follow-up that gave up: the message its claim made processing is answered again, as it was.
_GIVE_BACK_MESSAGE = (
    update(Message).where(Message.message_pk == bindparam("b_pk"), Message.status == "processing")
    .values(status="answered").execution_options(synchronize_session=False)
)
_tool_execution = TaskToolExecution.__table__
_tool_query = TaskToolQuery.__table__
# The uses recorded for a message whose results are known, in call order (ix on message_fk).
_RECORDED_USES = (
    select(_tool_execution.c.tool_name, _tool_execution.c.explanation, _tool_execution.c.call_id,
           _tool_execution.c.status, _tool_query.c.query, _tool_query.c.result)
    .join(_tool_query, _tool_query.c.task_tool_execution_fk == _tool_execution.c.task_tool_execution_pk)
    .where(_tool_execution.c.message_fk == bindparam("b_pk"), _tool_query.c.result.is_not(None))
    .order_by(_tool_execution.c.task_tool_execution_pk, _tool_query.c.task_tool_query_pk)
)
_INSERT_TOOL_EXECUTION = insert(TaskToolExecution.__table__).returning(
    TaskToolExecution.__table__.c.task_tool_execution_pk
)
_INSERT_TOOL_QUERY = insert(TaskToolQuery.__table__)


def record_approval_request(
    db: DbSession | Connection, request: ToolRequest, *, user_task_execution_pk: int, message_pk: int
) -> int:
    """The pending use of a tool that needs approval, written with the message that asks for it
    (two Core INSERTs in the turn's transaction); returns its task_tool_execution_pk."""
    now = _now()
    execution_pk = db.execute(_INSERT_TOOL_EXECUTION, {
        "user_task_execution_fk": user_task_execution_pk, "tool_name": request.name[:64], "status": "awaiting_approval",
        "explanation": request.explanation or None, "requires_approval": True, "call_id": request.call_id,
        "message_fk": message_pk, "created_at": now,
    }).scalar_one()
    db.execute(_INSERT_TOOL_QUERY, {
        "task_tool_execution_fk": execution_pk, "query": request.stored_query(), "created_at": now,
    })
    log.info("tool %s awaits approval, task_tool_execution=%s", request.name, execution_pk)
    return execution_pk


def recorded_uses(db: DbSession | Connection, message_pk: int) -> list[RecordedUse]:
    """The tool uses already made for a user message, as asked and with their results, in call order: what a
    turn answering it again (a retry, a follow-up) continues from, so that the model is told them rather than
    asking again. A use awaiting the user's decision, or with no result (its run cut off), is not one. A failed
    use (status ``failed``: refused, timed out, errored) is told but does not count toward the turn's bound."""
    return [
        RecordedUse(ToolRequest(name=row.tool_name, query=row.query, explanation=row.explanation or "",
                                call_id=row.call_id), row.result, counts=row.status != "failed")
        for row in db.execute(_RECORDED_USES, {"b_pk": message_pk}) if row.result is not None
    ]


def resumable(db: DbSession | Connection, task_tool_execution_pk: int, message_pk: int) -> bool:
    """A decided tool whose follow-up turn has not run yet (guards against answering twice)."""
    execution = db.execute(_DECISION, {"b_pk": task_tool_execution_pk}).first()
    if execution is None or execution.message_fk != message_pk or execution.status not in ("approved", "declined"):
        return False
    return db.execute(_RESULTS, {"b_pk": task_tool_execution_pk}).scalar() is None


class ToolDecisionError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class Decision:
    task_tool_execution_pk: int
    session_id: str
    message_pk: int
    approved: bool


def decide(db: DbSession, user_id: str, task_tool_execution_pk: int, approved: bool) -> Decision:
    """Record the user's decision once: 404 when not theirs, 409 when already decided."""
    row = db.execute(
        select(TaskToolExecution, UserTaskExecution.session_id)
        .join(UserTaskExecution, UserTaskExecution.user_task_execution_pk == TaskToolExecution.user_task_execution_fk)
        .join(UserTask, UserTask.user_task_pk == UserTaskExecution.user_task_fk)
        .where(TaskToolExecution.task_tool_execution_pk == task_tool_execution_pk, UserTask.user_id == user_id,
               UserTaskExecution.status != "deleted")
    ).first()
    if row is None:
        raise ToolDecisionError(404, "task_tool_execution not found")
    execution, session_id = row
    # A conditional update: of two concurrent decisions exactly one wins, on SQLite and Postgres.
    changed = db.execute(
        update(TaskToolExecution)
        .where(TaskToolExecution.task_tool_execution_pk == task_tool_execution_pk,
               TaskToolExecution.status == "awaiting_approval")
        .values(status="approved" if approved else "declined", approved=approved, decided_at=_now())
        .execution_options(synchronize_session=False)
    ).rowcount
    if not changed:
        raise ToolDecisionError(409, "this tool use was already decided")
    if execution.message_fk is None or db.get(Message, execution.message_fk) is None:
        raise ToolDecisionError(409, "the message that asked for this tool no longer exists")
    return Decision(task_tool_execution_pk, session_id, execution.message_fk, approved)


def undo_decision(db: DbSession, task_tool_execution_pk: int) -> bool:
    """The follow-up turn of a decision the runner refused (``JobRefused``): nothing ran it, so the use
    awaits the user's decision again, and the decision sent again runs it. False when it is no longer
    decided and untouched, as ``resumable`` reads it: its follow-up started meanwhile (an approved use is
    then ``running``) or ran (a declined use keeps its status: its result is recorded)."""
    # The execution row locked first, as every writer of a use locks it (``_finish`` updates it before its
    # query rows): a follow-up recording its result now is waited for, and its result read once committed.
    # Locking the query rows first took the two locks in the opposite order: a deadlock on Postgres.
    if db.scalar(_EXECUTION_LOCKED, {"b_pk": task_tool_execution_pk}) is None:
        return False
    if any(result is not None for result in db.scalars(_RESULTS, {"b_pk": task_tool_execution_pk})):
        return False
    return bool(db.execute(
        update(TaskToolExecution)
        .where(TaskToolExecution.task_tool_execution_pk == task_tool_execution_pk,
               TaskToolExecution.status.in_(("approved", "declined")))
        .values(status="awaiting_approval", approved=None, decided_at=None)
        .execution_options(synchronize_session=False)
    ).rowcount)
