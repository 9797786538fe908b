"""Order tasks used as a customer and an admin would, through the live server: each test is a bug a tester
found."""

from __future__ import annotations

from tests.order_platform._helpers import customer, open_order


def test_admin_marks_a_topping_out_of_stock_by_the_name_the_menu_shows(orders):
    """The pizzeria's value ids are codes ("PEPPERONI"): "pepperoni", the label GET /menu shows and the
    customer says, got a 400."""
    admin, base = orders.admin(), orders.base_url + "/menu_availability"
    chat = open_order(customer(orders, ("order_pizzeria",)), "order_pizzeria")
    change = {"menu_id": "pizzeria", "item_type": "pizza", "field": "toppings", "value": "pepperoni"}
    try:
        chat.say("a large pepperoni pizza")
        response = admin.put(base, json={**change, "in_stock": False}, timeout=10)
        assert response.status_code == 200, response.text
        # Every live order on the menu gets it: other tests' (a home chat's left orders) may share the database.
        assert response.json()["value"] == "PEPPERONI" and chat.pk in response.json()["out_of_stock_raised"]
        reception = chat.socket.wait_event("order_event_reception")[0]
        reply = chat._answer_of(reception["message_pk"])
        assert "pepperoni" in reply.lower() and chat.order()["state"] == "Clarifying"
        menu = chat.client.ok("GET", "/menu", params={"menu_id": "pizzeria"})["menu"]
        values = menu["item_types"]["pizza"]["fields"]["toppings"]["values"]
        assert next(v for v in values if v["id"] == "PEPPERONI")["in_stock"] is False
        # The customer's own event names it the same way.
        event = chat.client.call("POST", "/order_event", json={
            "user_task_execution_pk": chat.pk, "event": "out_of_stock",
            "item": {"item_type": "pizza", "field": "toppings", "value": "Pepperoni"}})
        assert event.status_code == 200, event.text
    finally:
        assert admin.put(base, json={**change, "in_stock": True}, timeout=10).status_code == 200
        chat.close()
    menu = chat.client.ok("GET", "/menu", params={"menu_id": "pizzeria"})["menu"]
    values = menu["item_types"]["pizza"]["fields"]["toppings"]["values"]
    assert next(v for v in values if v["id"] == "PEPPERONI")["in_stock"] is True
