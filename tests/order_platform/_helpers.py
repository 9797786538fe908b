"""An order conversation over the live API: REST for what the customer says, Socket.IO for the replies."""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import func, select

from mojodex_core.db.models import Message, OrderAudit
from tests.support.live import Client, LiveServer, SocketRecorder

FINAL = ("mojo_message", "error")


@dataclass
class OrderChat:
    client: Client
    pk: int
    session_id: str
    socket: SocketRecorder
    start: dict[str, Any]
    replies: list[str] = field(default_factory=list)

    def put(self, text: str, message_id: str | None = None) -> Any:
        return self.client.call("PUT", "/user_message", json={
            "session_id": self.session_id, "user_task_execution_pk": self.pk, "text": text,
            "message_id": message_id or uuid.uuid4().hex,
        })

    def say(self, text: str, message_id: str | None = None) -> str:
        """Sends an utterance; returns the reply once its order_state has arrived too."""
        response = self.put(text, message_id)
        assert response.status_code == 200, response.text
        return self._answer_of(response.json()["message_pk"])

    def event(self, event: str, item: dict | None = None) -> str:
        body: dict[str, Any] = {"user_task_execution_pk": self.pk, "event": event}
        if item is not None:
            body["item"] = item
        response = self.client.call("POST", "/order_event", json=body)
        assert response.status_code == 200, response.text
        return self._answer_of(response.json()["message_pk"])

    def _answer_of(self, message_pk: int, timeout: float = 15.0) -> str:
        def answered(events: list) -> bool:
            replies = [d for e, d in events if e in FINAL and d.get("user_message_pk") == message_pk]
            if not replies:
                return False
            if replies[0].get("error"):
                return True
            return any(e == "order_state" and d["seq"] > replies[0]["seq"] for e, d in events)

        events = self.socket.wait_for(answered, timeout)
        reply = next(d for e, d in events if e in FINAL and d.get("user_message_pk") == message_pk)
        if "error" in reply and "text" not in reply:
            raise AssertionError(f"turn failed: {reply['error']}")
        self.replies.append(reply["text"])
        return reply["text"]

    def order(self) -> dict[str, Any]:
        return self.client.ok("GET", "/order", params={"user_task_execution_pk": self.pk})

    def audit(self) -> list[dict[str, Any]]:
        return self.client.ok("GET", "/order/audit", params={"user_task_execution_pk": self.pk})["turns"]

    def error_of(self, message_pk: int, timeout: float = 15.0) -> dict[str, Any]:
        """The error event of the turn that failed message ``message_pk``, once it has arrived."""
        events = self.socket.wait_for(lambda evs: any(e == "error" and d.get("user_message_pk") == message_pk
                                                      for e, d in evs), timeout)
        return next(d for e, d in events if e == "error" and d.get("user_message_pk") == message_pk)

    def wait_state(self, state: str, timeout: float = 10.0) -> dict[str, Any]:
        """GET /order until the conversation is in ``state`` (e.g. Idle after the ticket's order_complete)."""
        deadline = time.monotonic() + timeout
        while True:
            snapshot = self.order()
            if snapshot["state"] == state:
                return snapshot
            assert time.monotonic() < deadline, f"state still {snapshot['state']}"
            time.sleep(0.05)

    def last_state(self) -> dict[str, Any]:
        return self.socket.named("order_state")[-1]

    def close(self) -> None:
        self.socket.close()


def open_order(client: Client, task: str = "order_bagel_shop", *, start: bool = True) -> OrderChat:
    created = client.ok("PUT", "/user_task_execution", json={"user_task_pk": client.user_task_pk(task)})
    socket = client.socket(created["session_id"])
    chat = OrderChat(client, created["user_task_execution_pk"], created["session_id"], socket, created)
    if start:
        client.ok("POST", "/user_task_execution_run", json={"user_task_execution_pk": chat.pk})
        socket.wait_event("order_state")
    return chat


def customer(live: LiveServer, tasks: tuple[str, ...] = ("order_bagel_shop",)) -> Client:
    return live.new_user(tasks=list(tasks))


def message_count(live: LiveServer, session_id: str) -> int:
    with live.db() as db:
        return db.scalar(select(func.count()).where(Message.session_id == session_id)) or 0


def audit_count(live: LiveServer, pk: int) -> int:
    with live.db() as db:
        return db.scalar(select(func.count()).where(OrderAudit.user_task_execution_fk == pk)) or 0


def items(order: dict[str, Any]) -> list[dict[str, Any]]:
    """The live (not skipped) lines of an order view."""
    return [i for i in order["items"] if i["status"] != "skipped"]
