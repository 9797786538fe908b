"""Sign-in, catalogue, starting a task, streaming, stop, retry, reconnect (in a real browser)."""

from __future__ import annotations

import re

import requests
from playwright.sync_api import expect

from tests.support.scripted_llm import HTTPError, Reply
from tests.webapp.conftest import PASSWORD, shot, sign_in, web_user

ANSWER = ("<execution><title>Meeting moved</title>"
          "<draft>Hello team,\n\nThe meeting is **moved** to *Friday*.</draft></execution>")


def _api_token(live, user) -> str:  # noqa: ANN001
    return requests.post(live.base_url + "/login", json={"email": user.email, "password": PASSWORD}).json()["token"]


def _executions(live, user) -> list[dict]:  # noqa: ANN001
    headers = {"Authorization": f"Bearer {_api_token(live, user)}"}
    return requests.get(live.base_url + "/user_task_execution", headers=headers).json()["user_task_executions"]


def _start_email(page, content: str = "The meeting moves to Friday") -> None:  # noqa: ANN001
    page.get_by_role("link", name=re.compile("Email")).first.click()
    page.get_by_label("What is the email about?").fill(content)
    page.get_by_label("Tone").select_option("formal")
    page.get_by_role("button", name="Start", exact=True).click()


def test_sign_in_fails_then_succeeds_and_signs_out(page, live):
    user = web_user(live)
    page.goto("/")
    # The task list is not there before sign-in (the old `hidden` bug).
    expect(page.get_by_role("link", name=re.compile("Email"))).to_have_count(0)
    page.get_by_label("Email").fill(user.email)
    page.get_by_label("Password").fill("not the password")
    page.get_by_role("button", name="Sign in", exact=True).click()
    expect(page.get_by_role("alert")).to_have_text("Wrong email or password.")
    shot(page, "sign-in")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in", exact=True).click()
    expect(page.get_by_role("link", name=re.compile("Email"))).to_be_visible()
    shot(page, "catalogue")
    page.get_by_role("button", name="Sign out").click()
    expect(page.get_by_role("button", name="Sign in", exact=True)).to_be_visible()
    expect(page.get_by_role("link", name=re.compile("Email"))).to_have_count(0)


def test_catalogue_in_french_with_search(page, live):
    user = web_user(live, language="fr")
    sign_in(page, user)
    expect(page.get_by_role("heading", name="Tâches")).to_be_visible()
    expect(page.get_by_text("Écrire un e-mail")).to_be_visible()
    page.get_by_label("Rechercher une tâche").fill("ecrire")  # accents do not matter
    expect(page.locator(".task-card")).to_have_count(1)
    page.get_by_label("Rechercher une tâche").fill("pizza")
    expect(page.locator(".task-card")).to_have_count(0)


def test_form_start_validates_then_streams_rendered_markdown(page, live, llm):
    user = web_user(live)
    sign_in(page, user)
    page.get_by_role("link", name=re.compile("Email")).first.click()
    assert _executions(live, user) == []  # opening a task creates nothing
    page.get_by_role("button", name="Start", exact=True).click()
    expect(page.locator(".field-error").first).to_have_text("Please fill in this field.")
    assert "inputs." not in page.inner_text("body")
    assert _executions(live, user) == []
    llm.script(Reply(chunks=[ANSWER[i:i + 12] for i in range(0, len(ANSWER), 12)], delay_s=0.02))
    page.get_by_label("What is the email about?").fill("The meeting moves to Friday")
    page.get_by_label("Tone").select_option("formal")
    page.get_by_role("button", name="Start", exact=True).click()
    expect(page.locator(".doc-body strong")).to_have_text("moved")
    expect(page.locator(".doc-title")).to_have_text("Meeting moved")
    expect(page.get_by_test_id("version-label")).to_have_text("Version 1 of 1")
    body = page.inner_text("body")
    assert "<execution>" not in body and "<draft>" not in body and "**" not in body
    assert len(_executions(live, user)) == 1
    shot(page, "execution")


def test_first_chat_message_starts_the_task(page, live, llm):
    user = web_user(live)
    sign_in(page, user)
    page.get_by_role("link", name=re.compile("Email")).first.click()
    llm.script(Reply("Who should receive it? Tell me **the recipient**."))
    page.get_by_label("Or just tell the assistant").fill("An email to my landlord")
    page.get_by_role("button", name="Send", exact=True).click()
    expect(page.locator(".message.user")).to_have_text("An email to my landlord")
    expect(page.locator(".message.assistant strong")).to_have_text("the recipient")


def test_stop_cancels_the_turn_and_retry_resends(page, live, llm):
    user = web_user(live)
    sign_in(page, user)
    page.get_by_role("link", name=re.compile("Email")).first.click()
    llm.script(Reply(chunks=[f"word{i} " for i in range(60)], delay_s=0.1))
    page.get_by_label("Or just tell the assistant").fill("Write to Bob")
    page.get_by_role("button", name="Send", exact=True).click()
    expect(page.locator(".message.assistant.streaming")).to_contain_text("word1")
    page.get_by_role("button", name="Stop").click()
    expect(page.locator(".message.error")).to_be_visible()
    expect(page.get_by_role("button", name="Send", exact=True)).to_be_visible()
    shot(page, "stopped")
    llm.script(Reply("Retried **fine**."))
    page.get_by_role("button", name="Retry").click()
    expect(page.locator(".message.assistant strong")).to_have_text("fine")
    expect(page.locator(".message.error")).to_have_count(0)
    expect(page.locator(".message.user")).to_have_count(1)  # same message_id: not a second message


def test_retry_after_an_llm_failure(page, live, llm):
    user = web_user(live)
    sign_in(page, user)
    page.get_by_role("link", name=re.compile("Email")).first.click()
    llm.script(HTTPError(500), HTTPError(500), HTTPError(500))
    page.get_by_label("Or just tell the assistant").fill("Write to Alice")
    page.get_by_role("button", name="Send", exact=True).click()
    expect(page.locator(".message.error")).to_be_visible()
    assert "/v1/" not in page.locator(".message.error").inner_text()
    llm.script(Reply("Back on **track**."))
    page.get_by_role("button", name="Retry").click()
    expect(page.locator(".message.assistant strong")).to_have_text("track")
    live.wait_idle()
    [execution] = _executions(live, user)
    headers = {"Authorization": f"Bearer {_api_token(live, user)}"}
    messages = requests.get(live.base_url + "/message", headers=headers,
                            params={"session_id": execution["session_id"]}).json()["messages"]
    sent = [m for m in messages if m["sender"] == "user"]
    assert [(m["text"], m["status"]) for m in sent] == [("Write to Alice", "answered")]  # retried, not resent


def test_reconnect_mid_stream_loses_and_duplicates_nothing(page, live, llm):
    user = web_user(live)
    sign_in(page, user)
    page.get_by_role("link", name=re.compile("Email")).first.click()
    words = [f"w{i} " for i in range(40)]
    llm.script(Reply(chunks=words, delay_s=0.05))
    page.get_by_label("Or just tell the assistant").fill("Stream please")
    page.get_by_role("button", name="Send", exact=True).click()
    expect(page.locator(".message.assistant.streaming")).to_contain_text("w3")
    page.evaluate("window.mojodexSocket.io.engine.close()")  # the connection drops mid-stream
    expect(page.locator(".message.assistant:not(.streaming)")).to_have_count(1, timeout=15_000)
    assert page.locator(".message.assistant").inner_text().strip() == "".join(words).strip()


def test_another_users_execution_shows_not_found(page, live, llm):
    owner = web_user(live)
    headers = {"Authorization": f"Bearer {_api_token(live, owner)}"}
    tasks = requests.get(live.base_url + "/user_task", headers=headers).json()["user_tasks"]
    pk = requests.put(live.base_url + "/user_task_execution", headers=headers,
                      json={"user_task_pk": tasks[0]["user_task_pk"]}).json()["user_task_execution_pk"]
    sign_in(page, web_user(live))
    page.goto(f"/#/execution/{pk}")
    expect(page.get_by_role("alert")).to_have_text("Not found: this task run does not exist or is not yours.")


def test_markup_in_a_reply_is_shown_never_run(page, live, llm):
    sign_in(page, web_user(live))
    page.get_by_role("link", name=re.compile("Email")).first.click()
    llm.script(Reply('Look: <img src="x" onerror="window.pwned=1"> <script>window.pwned=2</script> **safe**'))
    page.get_by_label("Or just tell the assistant").fill("Show me markup")
    page.get_by_role("button", name="Send", exact=True).click()
    expect(page.locator(".message.assistant strong")).to_have_text("safe")
    assert page.evaluate("window.pwned") is None
    assert page.locator(".message.assistant img, .message.assistant script").count() == 0


def test_a_failed_form_start_is_retried_with_the_same_form(page, live, llm):
    sign_in(page, web_user(live))
    llm.script(HTTPError(500), HTTPError(500), HTTPError(500))
    _start_email(page)
    expect(page.locator(".message.error")).to_be_visible()
    llm.script(Reply(ANSWER))
    page.get_by_role("button", name="Retry").click()
    expect(page.locator(".message.error")).to_have_count(0)
    expect(page.locator(".doc-title")).to_have_text("Meeting moved")
