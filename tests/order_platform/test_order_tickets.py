"""A full bagel order to its ticket: produced text, order_ticket event, signed and idempotent webhook delivery."""

from __future__ import annotations

import json
import time
import uuid

from mojodex_core.order_runtime.tickets import verify
from mojodex_core.task_spec import load_spec_file
from tests.order_platform._helpers import customer, open_order
from tests.order_platform._webhook import Receiver
from tests.order_platform.conftest import WEBHOOK_SECRET
from tests.support.live import REPO_ROOT, LiveServer

FULL_ORDER = (
    "Hi, I'd like an everything bagel with lox and a large iced latte",
    "yes please",
    "delivery please",
    "12 Main Street, Springfield",
    "that's it",
    "Dana",
    "dana@example.com",
    "cash on delivery",
    "yes",
)


def bagel_task_with_webhook(live: LiveServer, url: str | None) -> str:
    spec = load_spec_file(REPO_ROOT / "tasks_config" / "order_bagel_shop.json").model_dump(mode="json")
    name = f"order_bagel_{uuid.uuid4().hex[:8]}"
    spec.update(name_for_system=name, pos_webhook_url=url)
    response = live.admin().put(live.base_url + "/task", json=spec, timeout=10)
    assert response.status_code == 200, response.text
    return name


def wait_delivery(chat, status: str, timeout: float = 10.0) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        ticket = chat.order()["ticket"]
        if ticket and ticket["delivery"]["status"] == status:
            return ticket
        assert time.monotonic() < deadline, f"delivery still {ticket and ticket['delivery']}"
        time.sleep(0.05)


def place_full_order(live: LiveServer, task: str):  # noqa: ANN201
    client = live.new_user(tasks=[task])
    chat = open_order(client, task)
    for text in FULL_ORDER:
        chat.say(text)
    chat.socket.wait_event("order_ticket")
    return chat


def test_full_order_ticket_is_delivered_after_two_failures_with_one_idempotency_key(orders):
    receiver = Receiver(fail_first=2)
    chat = None
    try:
        chat = place_full_order(orders, bagel_task_with_webhook(orders, receiver.url))
        posts = receiver.wait_posts(3)
        ticket = wait_delivery(chat, "delivered")
        assert [p.status for p in posts] == [503, 503, 200]
        keys = {p.headers["Idempotency-Key"] for p in posts}
        assert keys == {ticket["ticket_id"]}
        for post in posts:
            assert verify(WEBHOOK_SECRET, post.body, post.headers["X-Mojodex-Signature"])
            assert not verify("another-secret-0123456789", post.body, post.headers["X-Mojodex-Signature"])
        assert len({p.body for p in posts}) == 1  # the same bytes every attempt
        body = json.loads(posts[-1].body)
        assert body["ticket_id"] == ticket["ticket_id"] and body["total"] == ticket["total"]
        assert body["lines"] and body["user_task_execution_pk"] == chat.pk
        delivery = ticket["delivery"]
        assert delivery["attempts"] == 3 and delivery["last_error"] is None and delivery["delivered_at"]
        # The ticket is the execution's produced text, and the conversation ended.
        chat.wait_state("Idle")
        produced = chat.client.ok("GET", "/user_task_execution_produced_text",
                                  params={"user_task_execution_pk": chat.pk})
        assert produced["produced_text_version_pk"] == ticket["produced_text_version_pk"]
        assert produced["produced_text"] == ticket["text"] and produced["text_type"] == "order"
        execution = chat.client.ok("GET", "/user_task_execution", params={"user_task_execution_pk": chat.pk})
        assert execution["status"] == "completed"
        event = chat.socket.named("order_ticket")[0]
        assert event["ticket"]["ticket_id"] == ticket["ticket_id"]
    finally:
        receiver.stop()
        if chat is not None:
            chat.close()


def test_a_receiver_that_always_fails_leaves_a_failed_delivery_in_get_order(orders):
    receiver = Receiver(fail_first=-1)
    chat = None
    try:
        chat = place_full_order(orders, bagel_task_with_webhook(orders, receiver.url))
        ticket = wait_delivery(chat, "failed")
        attempts = orders.platform.settings.pos_webhook_attempts
        assert ticket["delivery"]["attempts"] == attempts
        assert ticket["delivery"]["last_error"] == "HTTP 503" and ticket["delivery"]["delivered_at"] is None
        assert len(receiver.posts) == attempts
    finally:
        receiver.stop()
        if chat is not None:
            chat.close()


def test_without_a_webhook_the_ticket_is_stored_with_no_delivery(orders):
    client = customer(orders)
    chat = open_order(client)
    try:
        assert chat.order()["ticket"] is None
        for text in FULL_ORDER:
            chat.say(text)
        ticket = chat.order()["ticket"]
        assert ticket["delivery"]["status"] == "none" and ticket["lines"]
    finally:
        chat.close()


def test_an_unreachable_webhook_is_retried_then_failed(orders):
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    chat = place_full_order(orders, bagel_task_with_webhook(orders, f"http://127.0.0.1:{port}/tickets"))
    try:
        ticket = wait_delivery(chat, "failed")
        assert "Error" in ticket["delivery"]["last_error"] or "refused" in ticket["delivery"]["last_error"]
    finally:
        chat.close()


def test_webhook_secret_is_generated_once_into_var(tmp_path):
    import dataclasses

    from mojodex_core.config import webhook_secret
    from tests.support.live import live_settings

    settings = dataclasses.replace(live_settings("sqlite://", None), var_dir=tmp_path)
    first = webhook_secret(settings)
    assert len(first) >= 16 and webhook_secret(settings) == first
    assert (tmp_path / "mojodex_pos_webhook_secret").read_text().strip() == first


def test_the_ticket_text_cannot_be_edited_by_the_customer(orders):
    """A tester overwrote an order's produced text with "Total: $0.00" (POST /produced_text, 200): the
    execution's text then disagreed with its ticket, which GET /order and the POS had."""
    chat = place_full_order(orders, bagel_task_with_webhook(orders, None))
    try:
        ticket = chat.order()["ticket"]
        produced = chat.client.ok("GET", "/user_task_execution_produced_text",
                                  params={"user_task_execution_pk": chat.pk})
        for body in ({"user_task_execution_pk": chat.pk, "production": "Total: $0.00"},
                     {"produced_text_pk": produced["produced_text_pk"], "production": "Total: $0.00"}):
            answer = chat.client.call("POST", "/produced_text", json=body)
            assert answer.status_code == 409 and "ticket" in answer.json()["error"], answer.text
        answer = chat.client.call("POST", "/text_edit_action", json={
            "produced_text_version_pk": produced["produced_text_version_pk"], "text_edit_action_pk": 1})
        assert answer.status_code == 409 and "ticket" in answer.json()["error"], answer.text
        after = chat.client.ok("GET", "/user_task_execution_produced_text", params={"user_task_execution_pk": chat.pk})
        assert (after["produced_text_version_count"], after["produced_text"]) == (1, ticket["text"])
    finally:
        chat.close()
