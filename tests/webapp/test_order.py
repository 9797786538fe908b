"""A full bagel order in the browser: the progress tree checked at every turn, then the ticket."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from playwright.sync_api import expect

from tests.order_platform.conftest import load_order_specs, order_settings
from tests.support.live import LiveServer, serving
from tests.webapp.conftest import shot, sign_in, web_user


@pytest.fixture(scope="module")
def order_web_server(database_url: str, live_server: LiveServer) -> Iterator[LiveServer]:
    """A deterministic order server (no LLM) for this module only: closed, with its connections, after it."""
    with serving(order_settings(database_url), configure=load_order_specs) as server:
        yield server


@pytest.fixture
def live(order_web_server: LiveServer) -> Iterator[LiveServer]:
    """The browser tests of this module run against the order server."""
    yield order_web_server
    order_web_server.wait_idle(10)


# (customer says, what the tree shows afterwards: test id -> text it contains)
TURNS = [
    ("Hi, I'd like an everything bagel with lox and a large iced latte",
     {"item0": "everything", "item0-missing": "toasted", "item1": "large"}),
    ("yes please", {"item0": "toasted: true", "delivery": "—"}),
    ("delivery please", {"delivery": "delivery"}),
    ("12 Main Street, Springfield", {"delivery": "12 Main Street"}),
    ("that's it", {}),
    ("Dana", {"customer": "Dana"}),
    ("dana@example.com", {"customer": "dana@example.com"}),
    ("cash on delivery", {"payment": "cash"}),
    ("yes", {}),
]


def test_full_bagel_order_with_the_progress_tree_at_each_turn(page, live):
    sign_in(page, web_user(live, tasks=["order_bagel_shop"]))
    page.locator('[data-task="order_bagel_shop"]').click()
    page.get_by_role("button", name="Start", exact=True).click()
    expect(page.locator(".message.assistant").first).to_contain_text("What can I get for you today?")
    expect(page.locator(".conversation-state strong")).to_have_text("Ordering")
    items = page.get_by_test_id("order-item")
    parts = {"delivery": page.get_by_test_id("order-delivery"), "customer": page.get_by_test_id("order-customer"),
             "payment": page.get_by_test_id("order-payment")}
    totals = []
    for turn, (said, shown) in enumerate(TURNS, start=1):
        page.locator("#chat-text").fill(said)
        page.get_by_role("button", name="Send", exact=True).click()
        if turn < len(TURNS):
            expect(page.locator(".message.assistant")).to_have_count(turn + 1)
        for key, text in shown.items():
            if key.startswith("item"):
                index, _, part = key[4:].partition("-")
                target = items.nth(int(index)).locator(".field-missing" if part else ":scope")
                expect(target.first).to_contain_text(text)
            else:
                expect(parts[key]).to_contain_text(text)
        totals.append(page.get_by_test_id("order-total").inner_text())
        if turn == 2:
            expect(items.nth(0).locator(".field-missing")).to_have_count(0)
            expect(items.nth(0).get_by_role("img", name="complete")).to_be_visible()
            shot(page, "order")
    assert all(re.search(r"\d", total) for total in totals)
    assert totals[0] != "Total: $0.00"
    ticket = page.get_by_role("region", name="Ticket")
    expect(ticket).to_contain_text("lox")
    expect(page.locator(".conversation-state strong")).to_have_text(re.compile("Closing|Idle"))
    shot(page, "order-ticket")
