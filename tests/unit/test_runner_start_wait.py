"""A submit waiting for another submit's drain to be handed to the pool never waits forever."""

from __future__ import annotations

import threading

from background.runner import ThreadTurnRunner
from mojodex_core.execution.jobs import JobRefused, TurnJob


def test_a_submit_behind_a_hand_over_that_never_ends_is_refused_not_left_waiting():
    # was: the waiting submit's wait_for had no bound, and the hand-over's end (_started_with) ran in a block
    # of its own after the pool took the drain: an exception there left the session "starting", and every later
    # submit of that session waited forever. The session is left so here, as such an exception leaves it.
    runner = ThreadTurnRunner(lambda job, cancel: None, max_workers=1)
    runner.start_wait_s = 0.2
    runner._starting.add("s")
    outcome: list[BaseException | None] = []

    def submit() -> None:
        try:
            runner.submit(TurnJob(session_id="s", message_pk=1))
            outcome.append(None)
        except BaseException as exc:  # noqa: BLE001
            outcome.append(exc)

    try:
        waiter = threading.Thread(target=submit, daemon=True)
        waiter.start()
        waiter.join(5)
        assert not waiter.is_alive(), "the submit still waits"
        assert isinstance(outcome[0], JobRefused)
        assert "s" not in runner._queues and "s" not in runner._running
    finally:
        runner.shutdown()

