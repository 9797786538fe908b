"""GET /usage on a live server: totals equal the recorded calls, every group_by, bad parameters."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import select

from mojodex_core.db.models import LLMCall
from tests.integration._helpers import DRAFT, QUESTION, new_execution, run_form, send
from tests.support.scripted_llm import HTTPError, Reply


def all_calls(live) -> list[LLMCall]:
    live.platform.flush_llm_calls()  # as GET /usage does: rows are written a moment after the answer
    with live.db() as db:
        rows = list(db.scalars(select(LLMCall)))
        db.expunge_all()
        return rows


def usage(live, **params):
    response = live.admin().get(live.base_url + "/usage", params=params, timeout=30)
    assert response.status_code == 200, response.text
    return response.json()


@pytest.fixture
def some_calls(live, llm):
    """A new user with two ok calls (fixed usage) and one failed call."""
    client = live.new_user()
    pk, session_id = new_execution(client)
    socket = client.socket(session_id)
    try:
        llm.script(Reply(QUESTION, usage=(100, 10)), Reply(DRAFT, usage=(200, 20)), HTTPError(400))
        run_form(client, pk)
        socket.wait_event("mojo_message")
        send(client, pk, session_id, "to the team")
        socket.wait_event("draft_message")
        send(client, pk, session_id, "shorter")
        socket.wait_event("error")
    finally:
        socket.close()
        live.wait_idle()
    return client


def test_totals_equal_the_sum_of_the_recorded_calls_and_groups_add_up(live, some_calls):
    today = datetime.now(UTC).date().isoformat()
    calls = all_calls(live)
    report = usage(live, **{"from": "2000-01-01", "to": today})
    totals = report["totals"]
    assert totals["calls"] == len(calls)
    assert totals["errors"] == sum(1 for c in calls if c.status != "ok")
    assert totals["prompt_tokens"] == sum(c.prompt_tokens for c in calls)
    assert totals["completion_tokens"] == sum(c.completion_tokens for c in calls)
    assert totals["cost"] == pytest.approx(sum(c.cost for c in calls), abs=1e-6)
    latencies = sorted(c.latency_ms for c in calls)
    assert latencies[0] <= totals["latency_ms_p50"] <= totals["latency_ms_p95"] <= latencies[-1] + 0.1

    for group_by in ("user", "task", "day", "model"):
        groups = usage(live, group_by=group_by)["groups"]
        assert sum(g["calls"] for g in groups) == len(calls), group_by
        assert sum(g["prompt_tokens"] for g in groups) == totals["prompt_tokens"], group_by
        assert all(group_by in g for g in groups)

    mine = next(g for g in usage(live, group_by="user")["groups"] if g["user"] == some_calls.user_id)
    assert (mine["calls"], mine["errors"], mine["prompt_tokens"], mine["completion_tokens"]) == (3, 1, 300, 30)
    assert mine["total_tokens"] == 330 and mine["cost"] > 0
    days = usage(live, group_by="day")["groups"]
    assert today in [g["day"] for g in days]
    assert "test_email" in [g["task"] for g in usage(live, group_by="task")["groups"]]
    assert "gpt-4o-mini" in [g["model"] for g in usage(live, group_by="model")["groups"]]


def test_a_range_outside_the_calls_is_empty(live):
    tomorrow = (datetime.now(UTC) + timedelta(days=1)).date().isoformat()
    report = usage(live, **{"from": tomorrow, "group_by": "model"})
    assert report["totals"]["calls"] == 0 and report["totals"]["latency_ms_p50"] is None
    assert report["groups"] == []


@pytest.mark.parametrize(("params", "field"), [
    ({"group_by": "week"}, "group_by"),
    ({"from": "yesterday"}, "from"),
    ({"to": "2026-13-40"}, "to"),
    ({"from": "2026-02-02", "to": "2026-02-01"}, "to"),
    ({"limit": "5"}, "limit"),
    ({"to": "9999-12-31"}, "to"),  # the day after overflows: was a 500
    ({"from": "0001-01-01T00:00:00+01:00"}, "from"),  # before year 1 in UTC
])
def test_bad_parameters_are_400_with_the_field(live, params, field):
    response = live.admin().get(live.base_url + "/usage", params=params, timeout=30)
    assert response.status_code == 400
    assert response.json()["field"] == field and response.json()["error"]


def test_usage_needs_the_admin_secret(live):
    user = live.new_user()
    assert user.call("GET", "/usage").status_code == 403
