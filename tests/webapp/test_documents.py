"""Documents with versions, manual and assistant edits, follow-up tasks, history, admin (browser)."""

from __future__ import annotations

import json
import re

from playwright.sync_api import expect

from mojodex_core.db.models import User
from mojodex_core.users import issue_token
from tests.integration._edits import edited, load_edit_actions, load_minutes_task
from tests.support.live import ADMIN_SECRET, TEST_TASK, Client
from tests.support.scripted_llm import Reply
from tests.webapp.conftest import shot, sign_in, web_user


def _started(page, llm, title: str = "Budget", body: str = "The budget is **approved**.") -> None:  # noqa: ANN001
    llm.script(Reply(edited(title, body)))
    page.get_by_role("link", name=re.compile("Email")).first.click()
    page.get_by_label("What is the email about?").fill("The budget")
    page.get_by_label("Tone").select_option("friendly")
    page.get_by_role("button", name="Start", exact=True).click()
    expect(page.get_by_test_id("version-label")).to_have_text("Version 1 of 1")


def test_manual_edit_and_text_edit_action_each_make_a_version(page, live, llm):
    load_edit_actions(live)
    sign_in(page, web_user(live))
    _started(page, llm)
    page.get_by_role("button", name="Edit", exact=True).click()
    page.locator("#doc-editor").fill("The budget is approved, with **thanks**.")
    page.get_by_role("button", name="Save as new version").click()
    expect(page.get_by_test_id("version-label")).to_have_text("Version 2 of 2")
    expect(page.locator(".doc-body strong")).to_have_text("thanks")
    # The assistant's edit streams into version 3, never onto the version shown before it.
    chunks = ["<execution><title>Budget</title><draft>", "Short ", "and ", "**sweet**", ".</draft></execution>"]
    llm.script(Reply(chunks=chunks, delay_s=0.4))
    page.get_by_role("group", name="Edit with the assistant").get_by_role("button", name=re.compile("Shorter")).click()
    expect(page.get_by_test_id("version-label")).to_have_text(re.compile(r"Version 3 of 3 \(writing"))
    expect(page.get_by_test_id("version-label")).to_have_text("Version 3 of 3", timeout=15_000)
    expect(page.locator(".doc-body strong")).to_have_text("sweet")
    shot(page, "document-versions")
    page.get_by_role("button", name="Previous version").click()
    expect(page.get_by_test_id("version-label")).to_have_text("Version 2 of 3")
    expect(page.locator(".doc-body")).to_contain_text("with thanks")
    expect(page.locator(".doc-body")).not_to_contain_text("Short and")
    page.get_by_role("button", name="Previous version").click()
    expect(page.locator(".doc-body strong")).to_have_text("approved")


def test_a_manual_edit_made_while_a_newer_version_appeared_is_not_saved_blindly(page, live, llm):
    # The web app sends the version its editor opened on; a version made meanwhile (another tab, the
    # API) is named in the 409, the user's text stays in the editor, and saving again keeps it.
    user = web_user(live)
    sign_in(page, user)
    _started(page, llm)
    page.get_by_role("button", name="Edit", exact=True).click()
    page.locator("#doc-editor").fill("My careful rewrite.")
    with live.db() as db:
        token = issue_token(db, db.get(User, user.user_id))
    other = Client(live.base_url, token, user.user_id)
    pk = int(page.url.rstrip("/").split("/")[-1])
    other.ok("POST", "/produced_text", json={"user_task_execution_pk": pk, "production": "Another tab's text."})
    page.get_by_role("button", name="Save as new version").click()
    expect(page.get_by_role("alert")).to_contain_text("version 2 is newer")
    expect(page.locator("#doc-editor")).to_have_value("My careful rewrite.")
    # Cancel shows the newer version (the app fetched it), and editing again is based on it.
    page.get_by_role("button", name="Cancel").click()
    expect(page.get_by_test_id("version-label")).to_have_text("Version 2 of 2")
    expect(page.locator(".doc-body")).to_contain_text("Another tab's text.")
    expect(page.get_by_role("alert")).to_have_count(0)
    page.get_by_role("button", name="Edit", exact=True).click()
    page.locator("#doc-editor").fill("A second rewrite.")
    page.get_by_role("button", name="Save as new version").click()
    expect(page.get_by_test_id("version-label")).to_have_text("Version 3 of 3")
    # A 409 again, and saving again keeps the text as the newest version.
    other.ok("POST", "/produced_text", json={"user_task_execution_pk": pk, "production": "Yet another."})
    page.get_by_role("button", name="Edit", exact=True).click()
    page.locator("#doc-editor").fill("My careful rewrite.")
    expect(page.get_by_test_id("version-label")).to_have_text("Version 3 of 3")
    page.get_by_role("button", name="Save as new version").click()
    expect(page.get_by_role("alert")).to_contain_text("version 4 is newer")
    page.get_by_role("button", name="Save as new version").click()
    expect(page.get_by_test_id("version-label")).to_have_text("Version 5 of 5")
    expect(page.locator(".doc-body")).to_contain_text("My careful rewrite.")
    latest = other.ok("GET", "/user_task_execution_produced_text", params={"user_task_execution_pk": pk})
    assert (latest["produced_text_version_index"], latest["produced_text"]) == (5, "My careful rewrite.")


def test_history_restores_after_reload_and_renames_and_deletes(page, live, llm):
    sign_in(page, web_user(live))
    _started(page, llm, title="Quarterly plan")
    page.reload()
    # After a reload the work is still there: conversation and document.
    expect(page.locator(".doc-title")).to_have_text("Quarterly plan")
    expect(page.locator(".message.user")).to_contain_text("The budget")
    page.get_by_role("link", name="History").click()
    row = page.locator(".history-row").first
    expect(row).to_contain_text("Email")
    row.get_by_role("button", name=re.compile("Rename")).click()
    page.get_by_role("textbox", name="Rename").fill("Plan for Q3")
    page.get_by_role("button", name="Save as new version").click()
    expect(page.locator(".history-title").first).to_have_text("Plan for Q3")
    page.get_by_label("Search").fill("q3")
    expect(page.locator(".history-row")).to_have_count(1)
    shot(page, "history")
    page.get_by_label("Search").fill("nothing like this")
    expect(page.locator(".history-row")).to_have_count(0)
    page.get_by_label("Search").fill("")
    page.locator(".history-link").first.click()
    expect(page.locator(".doc-title")).to_have_text("Quarterly plan")
    page.get_by_role("link", name="History").click()
    page.once("dialog", lambda dialog: dialog.accept())
    page.get_by_role("button", name=re.compile("Delete")).first.click()
    expect(page.locator(".history-row")).to_have_count(0)


def test_predefined_action_chains_a_follow_up_task(page, live, llm):
    load_minutes_task(live)
    sign_in(page, web_user(live, tasks=["test_email", "test_minutes"]))
    llm.script(Reply(edited("Minutes", "We agreed on **Friday**.")))
    page.locator('[data-task="test_minutes"]').click()
    page.get_by_label("What is the email about?").fill("Our meeting")
    page.get_by_label("Tone").select_option("formal")
    page.get_by_role("button", name="Start", exact=True).click()
    expect(page.locator(".doc-title")).to_have_text("Minutes")
    llm.script(Reply(edited("Email to the team", "Please read the minutes.")))
    page.get_by_role("group", name="Next steps").get_by_role("button", name="Email").click()
    expect(page.locator(".doc-title")).to_have_text("Email to the team")
    expect(page.locator(".message.user").first).to_contain_text("Send these minutes to the whole team")


def test_admin_upload_shows_errors_by_field_path(page, live):
    page.goto("/#/admin")
    page.get_by_label("Admin secret").fill(ADMIN_SECRET)
    page.get_by_role("button", name="Sign in", exact=True).click()
    expect(page.locator(".admin-tasks")).to_contain_text("test_email")
    broken = {**TEST_TASK, "name_for_system": "broken_task", "icon": 12}
    del broken["final_instruction"]
    page.locator("#spec-text").fill(json.dumps(broken))
    page.get_by_role("button", name="Upload", exact=True).click()
    errors = page.locator(".spec-errors")
    expect(errors).to_contain_text("final_instruction")
    expect(errors).to_contain_text("icon")
    shot(page, "admin")
    good = {**TEST_TASK, "name_for_system": "admin_uploaded_task"}
    page.locator("#spec-text").fill(json.dumps(good))
    page.get_by_role("button", name="Upload", exact=True).click()
    expect(page.get_by_role("status")).to_have_text("✓ admin_uploaded_task")
    expect(page.locator(".admin-tasks")).to_contain_text("admin_uploaded_task")
    # A menu: its errors by field path too.
    page.get_by_label("Menu", exact=True).check()
    page.locator("#spec-text").fill(json.dumps({"id": "web_test_menu", "name": "Test", "item_types": "nope"}))
    page.get_by_role("button", name="Upload", exact=True).click()
    expect(page.locator(".spec-errors")).to_contain_text("item_types")
