"""Load through the real cluster: many sessions chatting at once through both backends.

Each session's socket is on one backend while its messages go through the other; every message
waits for its answer before the next (a user chatting). Checks: 0 lost, 0 duplicated, every
stream equal to its stored text, answers in order. The size defaults to 40 sessions x 5 messages
(bounded for the suite); MOJODEX_LOAD_SESSIONS / MOJODEX_LOAD_MESSAGES run the issue's 200 x 20.
p50/p99 of send-to-answer latency are printed and kept in the test report (-rP shows them).
"""

from __future__ import annotations

import os
import statistics
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from sqlalchemy import func, select

from mojodex_core.db.models import Message
from tests.distributed.conftest import answer_for
from tests.distributed.test_cluster import _answers, _send, _session
from tests.integration._helpers import by_seq

SESSIONS = int(os.environ.get("MOJODEX_LOAD_SESSIONS") or 40)
MESSAGES = int(os.environ.get("MOJODEX_LOAD_MESSAGES") or 5)
# The suite's per-test limit fits the default size; the 200 x 20 (CI runs it) takes minutes.
TIME_LIMIT_S = max(120, SESSIONS * MESSAGES // 5)


def _chat(backends, index: int) -> list[float]:  # noqa: ANN001
    home, other = backends[index % 2], backends[(index + 1) % 2]
    client, pk, session_id = _session(home)
    sender = type(client)(other.base_url, client.token, client.user_id)
    socket = client.socket(session_id)
    latencies = []
    try:
        for n in range(MESSAGES):
            started = time.monotonic()
            _send(sender, pk, session_id, f"fast {index}-{n}", message_id=f"m{n}")
            socket.wait_event("mojo_message", count=n + 1, timeout=120)
            latencies.append(time.monotonic() - started)
        events = list(socket.events)
    finally:
        socket.close()
    finals = [d for n, d in by_seq(events) if n == "mojo_message"]
    assert [f["text"] for f in finals] == [answer_for(f"fast {index}-{n}") for n in range(MESSAGES)]
    seqs = [d["seq"] for _n, d in events if isinstance(d, dict) and "seq" in d]
    assert len(seqs) == len(set(seqs)), f"session {index}: an event arrived twice"
    previous = 0
    for final in finals:  # each stream equals its stored answer
        deltas = "".join(d["delta"] for n, d in by_seq(events)
                         if n == "mojo_token" and previous < d["seq"] < final["seq"])
        assert deltas.strip() == final["text"], f"session {index}: stream differs from the answer"
        previous = final["seq"]
    stored = _answers(home, session_id)
    assert stored == [(f"fast {index}-{n}", answer_for(f"fast {index}-{n}"), "answered") for n in range(MESSAGES)]
    with home.db() as db:
        assistant = db.scalar(select(func.count()).select_from(Message).where(
            Message.session_id == session_id, Message.sender == "assistant"))
    assert assistant == MESSAGES, f"session {index}: {assistant} answers stored for {MESSAGES} messages"
    return latencies


@pytest.mark.timeout(TIME_LIMIT_S)
def test_sessions_chatting_at_once_lose_and_duplicate_nothing(backends, record_property, capsys):
    started = time.monotonic()
    with ThreadPoolExecutor(min(SESSIONS, 40)) as pool:
        latencies = [lat for session in pool.map(lambda i: _chat(backends, i), range(SESSIONS)) for lat in session]
    elapsed = time.monotonic() - started
    latencies.sort()
    p50 = statistics.median(latencies)
    p99 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))]
    summary = (f"load: {SESSIONS} sessions x {MESSAGES} messages, 2 backends + 2 workers: "
               f"{len(latencies)} answered in {elapsed:.1f} s, p50 {p50 * 1000:.0f} ms, p99 {p99 * 1000:.0f} ms")
    with capsys.disabled():  # shown by a plain `make test`, so CI's log has the figures
        print(f"\n{summary}")
    record_property("load", summary)
    assert len(latencies) == SESSIONS * MESSAGES
