"""An order's utterance or event whose turn the runner refuses (shut down, no thread to start): the route
answers 503 and the message fails visibly; the utterance sent again with its message_id, or the event
posted again, is answered. Before, the route answered 500 and the message stayed pending (its resend
answered as stored, never run) until the process restarted."""

from __future__ import annotations

from mojodex_core.execution.failures import NOT_STARTED
from tests.order_platform._helpers import customer, items, open_order


def test_a_refused_utterance_fails_and_is_answered_when_sent_again(orders, refuse):
    chat = open_order(customer(orders))
    try:
        refuse(orders)
        refused = chat.put("I'd like a sesame bagel", message_id="u-1")
        assert refused.status_code == 503, refused.text
        assert refused.json() == {"error": NOT_STARTED} and refused.headers["Retry-After"] == "5"
        error = chat.socket.wait_event("error")[0]
        assert (error["error"], error["message_id"], error["retryable"]) == (NOT_STARTED, "u-1", True)
        refuse.undo()
        again = chat.put("I'd like a sesame bagel", message_id="u-1")
        assert again.status_code == 200 and again.json()["message_pk"] == error["user_message_pk"], again.text
        def answered(events: list) -> bool:  # the reply, then its order_state (as OrderChat.say waits)
            reply = next((d for e, d in events if e == "mojo_message"
                          and d.get("user_message_pk") == error["user_message_pk"]), None)
            return reply is not None and any(e == "order_state" and d["seq"] > reply["seq"] for e, d in events)

        chat.socket.wait_for(answered)
        assert [i["item_type"] for i in items(chat.order()["order"])] == ["bagel"]
    finally:
        chat.close()


def test_a_refused_order_event_fails_and_is_answered_when_posted_again(orders, refuse):
    chat = open_order(customer(orders))
    try:
        chat.say("I'd like a sesame bagel")
        refuse(orders)
        body = {"user_task_execution_pk": chat.pk, "event": "out_of_stock",
                "item": {"item_type": "bagel", "field": "bagel_type", "value": "sesame"}}
        refused = chat.client.call("POST", "/order_event", json=body)
        assert refused.status_code == 503, refused.text
        assert refused.json() == {"error": NOT_STARTED}
        assert chat.socket.wait_event("error")[0]["error"] == NOT_STARTED
        assert chat.order()["state"] != "Clarifying"  # nothing ran
        refuse.undo()
        reply = chat.event("out_of_stock", body["item"])
        assert "out of sesame" in reply
    finally:
        chat.close()
