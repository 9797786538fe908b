"""A long replay reaches a long-polling client as it reaches a WebSocket one.

The python-socketio client refuses a poll response holding more than 16 packets (engineio's
max_decode_packets); the server used to put a whole replay in one response, so polling
clients received nothing once a session held more than 16 events.
"""

from __future__ import annotations

import threading

import pytest
import socketio

from tests.integration._helpers import new_execution

EVENTS = 60


class PollingRecorder:
    def __init__(self, base_url: str, token: str) -> None:
        self.events: list[tuple[str, dict]] = []
        self.lock = threading.Lock()
        self.client = socketio.Client(reconnection=False)
        self.client.on("*", self._record)
        self.client.connect(base_url, auth={"token": token}, transports=["polling"], wait_timeout=10)

    def _record(self, event: str, data: dict | None = None) -> None:
        with self.lock:
            self.events.append((event, data))


@pytest.mark.parametrize("transport", ["polling", "websocket"])
def test_a_replay_of_more_than_16_events_reaches_the_client(live, transport):
    client = live.new_user()
    _pk, session_id = new_execution(client)
    for index in range(EVENTS):  # durable events, as a long conversation leaves them
        live.platform.events.publish(session_id, "mojo_message", {"session_id": session_id, "text": f"m{index}"})
    if transport == "polling":
        recorder = PollingRecorder(client.base_url, client.token)
        sio = recorder.client
    else:
        recorder = client.socket()
        sio = recorder.client
    try:
        assert sio.transport() == transport
        ack = sio.call("start_session", {"session_id": session_id, "last_seq": 0}, timeout=20)
        assert ack == {"session_id": session_id, "replayed": EVENTS}
        texts = [d["text"] for e, d in recorder.events if e == "mojo_message"]
        assert texts == [f"m{i}" for i in range(EVENTS)]
        seqs = [d["seq"] for e, d in recorder.events if e == "mojo_message"]
        assert seqs == sorted(seqs) and len(set(seqs)) == EVENTS
        assert sio.connected
    finally:
        sio.disconnect()
