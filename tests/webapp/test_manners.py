"""Good manners: a phone-sized screen, the keyboard alone, labelled controls."""

from __future__ import annotations

import re

from playwright.sync_api import expect

from tests.support.scripted_llm import Reply
from tests.webapp.conftest import PASSWORD, shot, web_user


def test_phone_sized_screen_and_keyboard_only(page, live, llm):
    user = web_user(live)
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto("/")
    expect(page.get_by_label("Email")).to_be_visible()  # rendered: the first Tab lands in the form
    # Keyboard only: Tab to each labelled field, Enter submits.
    page.keyboard.press("Tab")
    expect(page.get_by_label("Email")).to_be_focused()
    page.keyboard.type(user.email)
    page.keyboard.press("Tab")
    expect(page.get_by_label("Password")).to_be_focused()
    page.keyboard.type(PASSWORD)
    page.keyboard.press("Enter")
    expect(page.locator(".task-card").first).to_be_visible()
    # The navigation folds behind a labelled menu button on a phone.
    expect(page.get_by_role("link", name="History")).to_be_hidden()
    page.get_by_role("button", name="Menu").click()
    expect(page.get_by_role("link", name="History")).to_be_visible()
    page.get_by_role("button", name="Menu").click()
    page.locator(".task-card").first.focus()
    page.keyboard.press("Enter")
    llm.script(Reply("Short answer, **phone** sized."))
    page.get_by_label("Or just tell the assistant").fill("hello from a phone")
    page.keyboard.press("Enter")
    expect(page.locator(".message.assistant strong")).to_have_text("phone")
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")  # no sideways scrolling
    shot(page, "phone")
    # Every form control has an accessible name.
    unnamed = page.evaluate("""() => [...document.querySelectorAll('input, textarea, select, button')]
        .filter((el) => !(el.labels?.length || el.getAttribute('aria-label') || el.textContent.trim()
                          || el.getAttribute('aria-labelledby')))
        .map((el) => el.outerHTML)""")
    assert unnamed == []
    expect(page.get_by_role("button", name=re.compile("Send|Stop"))).to_be_visible()
