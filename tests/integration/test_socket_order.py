"""The suite's socket client records events in the order the server sent them.

python-engineio's client starts a thread per received message to run its handler, so a recorder
built on it can list events out of order under load (a bench client once reported a streamed text
unequal to its stored one that way). tests.support.live.SocketRecorder runs handlers on the read
thread instead, as a browser's socket.io-client does.
"""

from __future__ import annotations

import threading

from tests.integration._helpers import new_execution
from tests.support.live import InOrderEngineIOClient


def test_a_burst_of_token_events_is_recorded_in_seq_order(live):
    client = live.new_user()
    _pk, session_id = new_execution(client)
    socket = client.socket(session_id)
    try:
        events = live.platform.events
        first = events.publish(session_id, "mojo_token", {"session_id": session_id, "delta": "0"}, durable=False)

        def burst(n: int) -> None:
            for i in range(n):
                events.publish(session_id, "mojo_token", {"session_id": session_id, "delta": str(i)}, durable=False)

        # Other threads keep the GIL busy meanwhile, as turns and requests do on a loaded server.
        spinners = [threading.Thread(target=lambda: sum(range(3_000_000))) for _ in range(2)]
        for t in spinners:
            t.start()
        burst(300)
        tokens = socket.wait_event("mojo_token", 301, timeout=30)
        for t in spinners:
            t.join()
    finally:
        socket.close()
    seqs = [t["seq"] for t in tokens]
    assert seqs == list(range(first, first + 301))


def test_the_recorder_runs_message_handlers_on_the_read_thread(live):
    client = live.new_user()
    socket = client.socket()
    try:
        assert isinstance(socket.client.eio, InOrderEngineIOClient)
    finally:
        socket.close()
