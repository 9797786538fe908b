"""Home chat messages in tests: say one, wait for its answer (an order's once its order_state arrived)."""

from __future__ import annotations

import uuid

# The routing model's reply choosing the pizzeria's order task.
PIZZA_ROUTE = "<reasoning>they want to order a pizza</reasoning><route_to_task>order_pizzeria</route_to_task>"


def say(client, session_id: str, text: str, message_id: str | None = None) -> dict:  # noqa: ANN001
    return client.ok("PUT", "/user_message", json={
        "origin": "home_chat", "session_id": session_id, "text": text, "message_id": message_id or uuid.uuid4().hex,
    })


def answer(socket, message_pk: int, timeout: float = 15.0) -> dict:  # noqa: ANN001
    """The final reply (or error) to ``message_pk``, and for an order's reply once its order_state arrived."""
    def answered(events: list) -> bool:
        final = [d for e, d in events if e in ("mojo_message", "error") and d.get("user_message_pk") == message_pk]
        if not final or "error" in final[0] or final[0].get("user_task_execution_pk") is None:
            return bool(final)
        return any(e == "order_state" and d["seq"] > final[0]["seq"] for e, d in events)

    events = socket.wait_for(answered, timeout=timeout)
    return next(d for e, d in events if e in ("mojo_message", "error") and d.get("user_message_pk") == message_pk)
