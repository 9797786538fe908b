"""A workflow in the browser: steps with their status, validate one, reject one with an instruction in
the review chat, and the result as the document."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import expect

from tests.support.live import LiveServer, serving
from tests.support.scripted_llm import Reply
from tests.webapp.conftest import shot, sign_in, web_user
from tests.workflow.conftest import load_workflows, workflow_settings


@pytest.fixture(scope="module")
def workflow_web_server(database_url: str, scripted_llm, live_server: LiveServer) -> Iterator[LiveServer]:  # noqa: ANN001
    with serving(workflow_settings(database_url, scripted_llm.base_url), configure=load_workflows) as server:
        yield server


@pytest.fixture
def live(workflow_web_server: LiveServer, llm) -> Iterator[LiveServer]:  # noqa: ANN001
    yield workflow_web_server
    workflow_web_server.wait_idle(10)


def decision(kind: str, message: str, instruction: str | None = None) -> Reply:
    return Reply(json={"reasoning": "why", "kind": kind, "message": message, "instruction": instruction})


def test_workflow_validated_then_rejected_with_an_instruction(page, live, llm):
    sign_in(page, web_user(live, tasks=["write_poem"]))
    page.locator('[data-task="write_poem"]').click()
    llm.script(Reply(json={"stanza_topics": ["waves", "moon", "stars"]}))
    page.get_by_label("What is the poem about?").fill("the sea at night")
    page.get_by_role("button", name="Start", exact=True).click()
    steps = page.get_by_test_id("workflow-step")
    expect(steps.first).to_contain_text("stanza divider")
    expect(steps.first).to_contain_text("waves")
    # Rejected: the review chat opens; an instruction re-runs the step with it.
    steps.first.get_by_role("button", name="Reject").click()
    expect(page.locator(".workflow .notice")).to_contain_text("Tell the assistant what to change")
    llm.script(decision("instruction", "I will write it in two stanzas.", "Use at most two stanzas"),
               Reply(json={"stanza_topics": ["waves", "moon"]}))
    page.locator("#chat-text").fill("Too long, two stanzas please")
    page.get_by_role("button", name="Send", exact=True).click()
    expect(page.locator(".message.assistant").last).to_have_text("I will write it in two stanzas.")
    expect(steps).to_have_count(1)
    expect(steps.first).not_to_contain_text("stars", timeout=15_000)
    expect(steps.first.get_by_role("button", name="Validate")).to_be_visible()
    shot(page, "workflow")
    # Validated: the writer runs each stanza, and the poem becomes the document.
    llm.script(Reply("Waves roll in the dark."), Reply("The moon keeps watch."))
    steps.first.get_by_role("button", name="Validate").click()
    expect(steps).to_have_count(3, timeout=15_000)
    expect(page.locator(".doc-body")).to_contain_text("The moon keeps watch.", timeout=15_000)
    expect(steps.first).to_contain_text("validated")
