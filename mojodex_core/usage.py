"""Usage and cost from llm_call: parameter parsing and aggregation are pure; one query reads rows.

Percentiles are computed in Python (nearest rank), the same on SQLite and Postgres, over the
calls of the requested range.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session as DbSession

from mojodex_core.db.models import LLMCall, Task, UserTask, UserTaskExecution
from mojodex_core.timestamps import as_utc, iso_utc

GROUP_BYS = ("user", "task", "day", "model")


class UsageParamError(ValueError):
    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


@dataclass(frozen=True)
class UsageQuery:
    start: datetime | None  # inclusive
    end: datetime | None  # exclusive
    group_by: str | None


@dataclass(frozen=True)
class CallRow:
    key: Any
    prompt_tokens: int
    completion_tokens: int
    latency_ms: float
    cost: float
    status: str


def _instant(name: str, raw: str, *, end: bool) -> datetime:
    """YYYY-MM-DD (a whole day: `to` includes it) or an ISO 8601 datetime (UTC when no offset)."""
    text = raw.strip()
    try:
        if len(text) == 10:
            day = date.fromisoformat(text)
            moment = datetime(day.year, day.month, day.day, tzinfo=UTC)
            return moment + timedelta(days=1) if end else moment
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
        moment = as_utc(moment)
    except (ValueError, OverflowError):  # OverflowError: the day after 9999-12-31, or an offset past it
        message = f"{name} must be a date (YYYY-MM-DD) or an ISO 8601 datetime, got {raw!r}"
        raise UsageParamError(name, message) from None
    return moment


def parse_usage_query(args: Mapping[str, str]) -> UsageQuery:
    unknown = sorted(set(args) - {"from", "to", "group_by"})
    if unknown:
        raise UsageParamError(unknown[0], f"unknown parameter {unknown[0]!r} (known: from, to, group_by)")
    start = _instant("from", args["from"], end=False) if args.get("from") else None
    end = _instant("to", args["to"], end=True) if args.get("to") else None
    if start is not None and end is not None and start >= end:
        raise UsageParamError("to", "to must be after from")
    group_by = args.get("group_by") or None
    if group_by is not None and group_by not in GROUP_BYS:
        raise UsageParamError("group_by", f"group_by must be one of: {', '.join(GROUP_BYS)} (got {group_by!r})")
    return UsageQuery(start, end, group_by)


def percentile(sorted_values: list[float], p: float) -> float | None:
    """Nearest-rank percentile of an ascending list (None when empty)."""
    if not sorted_values:
        return None
    rank = max(1, math.ceil(p / 100 * len(sorted_values)))
    return sorted_values[rank - 1]


def summarise(rows: Iterable[CallRow]) -> dict[str, Any]:
    rows = list(rows)
    latencies = sorted(r.latency_ms for r in rows)
    prompt = sum(r.prompt_tokens for r in rows)
    completion = sum(r.completion_tokens for r in rows)
    p50, p95 = percentile(latencies, 50), percentile(latencies, 95)
    return {
        "calls": len(rows),
        "errors": sum(1 for r in rows if r.status != "ok"),
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "cost": round(sum(r.cost for r in rows), 8),
        "latency_ms_p50": round(p50, 1) if p50 is not None else None,
        "latency_ms_p95": round(p95, 1) if p95 is not None else None,
    }


def aggregate(rows: Iterable[CallRow], group_by: str | None) -> dict[str, Any]:
    rows = list(rows)
    out: dict[str, Any] = {"totals": summarise(rows)}
    if group_by is not None:
        groups: dict[Any, list[CallRow]] = {}
        for row in rows:
            groups.setdefault(row.key, []).append(row)
        # Sorted by key; calls with no key (no user/task: e.g. made outside an execution) last.
        ordered = sorted(groups.items(), key=lambda kv: (kv[0] is None, str(kv[0])))
        out["groups"] = [{group_by: key, **summarise(members)} for key, members in ordered]
    return out


def _day(moment: datetime) -> str:
    return as_utc(moment).date().isoformat()


def call_rows(db: DbSession, query: UsageQuery) -> list[CallRow]:
    key_column: Any = {
        "user": UserTask.user_id,
        "task": Task.name_for_system,
        "model": LLMCall.model,
        "day": LLMCall.created_at,
    }.get(query.group_by or "", LLMCall.model)
    stmt = select(
        key_column, LLMCall.prompt_tokens, LLMCall.completion_tokens, LLMCall.latency_ms, LLMCall.cost,
        LLMCall.status,
    )
    if query.group_by in ("user", "task"):
        stmt = stmt.outerjoin(
            UserTaskExecution, UserTaskExecution.user_task_execution_pk == LLMCall.user_task_execution_fk
        ).outerjoin(UserTask, UserTask.user_task_pk == UserTaskExecution.user_task_fk)
        if query.group_by == "task":
            stmt = stmt.outerjoin(Task, Task.task_pk == UserTask.task_fk)
    if query.start is not None:
        stmt = stmt.where(LLMCall.created_at >= query.start)
    if query.end is not None:
        stmt = stmt.where(LLMCall.created_at < query.end)
    rows = []
    for key, prompt, completion, latency, cost, status in db.execute(stmt):
        if query.group_by == "day":
            key = _day(key)
        rows.append(CallRow(key, prompt or 0, completion or 0, latency or 0.0, cost or 0.0, status))
    return rows


def usage_report(db: DbSession, query: UsageQuery) -> dict[str, Any]:
    return {
        "from": iso_utc(query.start),
        "to": iso_utc(query.end),
        "group_by": query.group_by,
        **aggregate(call_rows(db, query), query.group_by),
    }
