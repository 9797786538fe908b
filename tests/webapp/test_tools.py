"""A tool awaiting approval in the browser: its explanation, approve, the follow-up; the "why?" trace."""

from __future__ import annotations

from playwright.sync_api import expect

from tests.integration._tools import TOOL_TASK, answer, install_tool_task, tag_call
from tests.support.scripted_llm import Reply
from tests.webapp.conftest import shot, sign_in, web_user


def test_tool_approval_then_reasoning_behind_why(page, live, llm):
    install_tool_task(live, "http://127.0.0.1:9")  # the http_json tool is not used here
    sign_in(page, web_user(live, tasks=[TOOL_TASK]))
    page.locator(f'[data-task="{TOOL_TASK}"]').click()
    llm.script(Reply(chunks=list(tag_call("guarded_echo", {"text": "secret"}, "May I echo your **secret**?"))))
    page.get_by_label("Or just tell the assistant").fill("echo my secret")
    page.get_by_role("button", name="Send", exact=True).click()
    expect(page.locator(".message.assistant").last).to_contain_text("The assistant wants to use a tool:")
    # Pinned by position: `.last` would move to the follow-up answer as soon as it arrives.
    message = page.locator(".message.assistant").nth(page.locator(".message.assistant").count() - 1)
    expect(message.locator("strong")).to_have_text("secret")
    shot(page, "tool-approval")
    llm.script(Reply(chunks=list(answer("Done: the echo said secret."))))
    message.get_by_role("button", name="Approve").click()
    # The follow-up first, then the approval message, whatever the order they render in.
    expect(page.locator(".message.assistant").last).to_have_text("Done: the echo said secret.")
    expect(message).to_contain_text("Approved")
    body = page.inner_text("body")
    assert "<" not in body and "SECRET-WHY" not in body  # tags and reasoning never shown in the chat
    page.get_by_role("button", name="Why?").click()
    expect(page.locator(".reasoning-list")).to_contain_text("SECRET-WHY")
