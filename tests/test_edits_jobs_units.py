"""Pure parts of edits, jobs and usage: spec validation, files, percentiles, grouping, the job runner."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path

import pytest

from background.jobs import ThreadJobRunner, backoff_s
from mojodex_core.task_spec import SpecError
from mojodex_core.text_edit.prompt import edit_messages
from mojodex_core.text_edit.spec import validate_text_edit_action
from mojodex_core.text_edit.store import text_edit_action_files
from mojodex_core.usage import CallRow, UsageParamError, aggregate, parse_usage_query, percentile

REPO = Path(__file__).resolve().parents[1]
VALID = {
    "name": "shorter",
    "output_types": ["email"],
    "displayed_data": [{"language_code": "en", "name": "Shorter", "description": "Make it shorter"}],
    "prompt_template": "Shorten this {{ text_type }} for {{ username }}.",
}


def test_the_shipped_actions_are_valid_and_found_next_to_the_task_specs():
    files = text_edit_action_files([REPO / "tasks_config"])
    names = {validate_text_edit_action(__import__("json").loads(p.read_text())).name for p in files}
    assert names == {"shorter", "more_formal", "more_casual", "translate"}
    assert text_edit_action_files([REPO / "tasks_config" / "text_edit_actions"]) == files
    assert text_edit_action_files([REPO / "tasks_config" / "linkedin_post.json"]) == []


@pytest.mark.parametrize(("change", "path"), [
    ({"prompt_template": "Shorten {{ txt }}"}, "prompt_template"),
    ({"prompt_template": "{% if %}"}, "prompt_template"),
    ({"prompt_template": "{{ ''.__class__.__mro__ }}"}, "prompt_template"),
    ({"displayed_data": [{"language_code": "fr", "name": "Court", "description": "Court"}]}, "displayed_data"),
    ({"output_types": []}, "output_types"),
    ({"name": "Has Spaces"}, "name"),
    ({"unknown": 1}, "unknown"),
])
def test_a_bad_spec_is_rejected_with_its_path(change, path):
    with pytest.raises(SpecError) as caught:
        validate_text_edit_action({**VALID, **change})
    assert path in caught.value.paths


def test_edit_messages_render_the_action_as_the_user_turn():
    messages = edit_messages(VALID["prompt_template"], title="T", draft="Body", language="fr", text_type="email",
                             username="Ana")
    assert messages[1] == {"role": "user", "content": "Shorten this email for Ana."}
    assert "<draft>Body</draft>" in messages[0]["content"]


def test_percentile_is_nearest_rank():
    values = [float(v) for v in range(1, 101)]
    assert (percentile(values, 50), percentile(values, 95), percentile([7.0], 95), percentile([], 50)) == (
        50.0, 95.0, 7.0, None)


def test_aggregate_groups_and_totals():
    rows = [CallRow("a", 10, 1, 100.0, 0.5, "ok"), CallRow("b", 20, 2, 300.0, 0.25, "error"),
            CallRow(None, 5, 0, 200.0, 0.0, "ok")]
    report = aggregate(rows, "user")
    assert report["totals"] == {"calls": 3, "errors": 1, "prompt_tokens": 35, "completion_tokens": 3,
                                "total_tokens": 38, "cost": 0.75, "latency_ms_p50": 200.0, "latency_ms_p95": 300.0}
    assert [g["user"] for g in report["groups"]] == ["a", "b", None]


def test_usage_parameters():
    query = parse_usage_query({"from": "2026-01-01", "to": "2026-01-01", "group_by": "day"})
    assert (query.end - query.start).days == 1  # a date-only `to` includes its day
    assert parse_usage_query({"from": "2026-01-01T10:00:00+02:00"}).start.hour == 8
    for args, field in (({"group_by": "x"}, "group_by"), ({"to": "nope"}, "to"), ({"x": "1"}, "x")):
        with pytest.raises(UsageParamError) as caught:
            parse_usage_query(args)
        assert caught.value.field == field


def test_backoff_doubles_and_is_capped():
    assert [backoff_s(a, 1.0, 5.0) for a in (1, 2, 3, 4)] == [1.0, 2.0, 4.0, 5.0]


@dataclass(frozen=True)
class FlakyJob:
    name: str
    attempt: int = 1


class Flaky:
    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.runs: list[int] = []
        self.gave_up: list[tuple[FlakyJob, str]] = []
        self.lock = threading.Lock()

    def run(self, job: FlakyJob) -> None:
        with self.lock:
            self.runs.append(job.attempt)
        if job.attempt <= self.failures:
            raise RuntimeError(f"failure {job.attempt}")

    def give_up(self, job: FlakyJob, error: BaseException) -> None:
        self.gave_up.append((job, str(error)))


@pytest.mark.parametrize(("failures", "runs", "gave_up"), [(0, [1], False), (2, [1, 2, 3], False),
                                                           (5, [1, 2, 3], True)])
def test_the_job_runner_retries_then_gives_up(failures, runs, gave_up):
    handler = Flaky(failures)
    runner = ThreadJobRunner({FlakyJob: handler}, max_attempts=3, backoff_base_s=0.0)
    try:
        runner.submit(FlakyJob("x"))
        assert runner.wait_idle(10)
        assert handler.runs == runs
        assert bool(handler.gave_up) is gave_up
        if gave_up:
            assert handler.gave_up[0][0].attempt == 3 and handler.gave_up[0][1] == "failure 3"
    finally:
        runner.shutdown()


def test_a_job_failing_once_its_runner_is_shut_down_is_left_for_the_next_start():
    # was: given up, which marks a title "failed" for good, when the failure was only the process
    # quitting (its LLM call cancelled): the job stays claimed and the next start runs it again.
    started, release = threading.Event(), threading.Event()

    class Quitting(Flaky):
        def run(self, job: FlakyJob) -> None:
            self.runs.append(job.attempt)
            started.set()
            release.wait(10)
            raise RuntimeError("cancelled")

    handler = Quitting(0)
    runner = ThreadJobRunner({FlakyJob: handler}, max_attempts=3, backoff_base_s=0.0)
    runner.submit(FlakyJob("x"))
    assert started.wait(10)
    runner.shutdown(wait=False)
    release.set()
    assert runner.wait_idle(10)
    assert handler.runs == [1] and handler.gave_up == []  # neither retried nor given up


def test_a_shutdown_right_after_the_closed_check_does_not_lose_the_submitted_job():
    # was: submit() checked "closed" under the lock and submitted after releasing it: a shutdown in
    # between (turns still run, and submit title jobs, while the process quits) made the pool raise
    # RuntimeError and left the job counted in flight forever.
    handler = Flaky(0)
    runner = ThreadJobRunner({FlakyJob: handler}, max_attempts=3, backoff_base_s=0.0)
    lock = runner._lock

    class ShutdownOnRelease:  # the other thread's shutdown lands as the lock is released
        def __enter__(self):  # noqa: ANN204
            return lock.__enter__()

        def __exit__(self, *exc):  # noqa: ANN002, ANN204
            released = lock.__exit__(*exc)
            runner._lock = lock
            runner._pool.shutdown(wait=False)
            return released

    runner._lock = ShutdownOnRelease()
    runner.submit(FlakyJob("x"))  # raised RuntimeError
    assert runner.wait_idle(10)
    assert handler.runs == [1]
