"""Browser tests: Playwright driving Debian's Chromium (/usr/bin/chromium) against the live
server (which serves webapp/dist) and the scripted LLM.

They need the build (`make webapp`, which `make test` runs) and the chromium package
(`.ci/run` installs it). Without them the tests are skipped with the reason, except under CI
(CI set), where a missing browser or build is an error.
"""

from __future__ import annotations

import os
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from mojodex_core.passwords import set_password
from mojodex_core.users import create_user, grant
from tests.support.live import REPO_ROOT, LiveServer

CHROMIUM = Path(os.environ.get("MOJODEX_CHROMIUM", "/usr/bin/chromium"))
BUILD = REPO_ROOT / "webapp" / "dist" / "index.html"
SHOTS = REPO_ROOT / "docs" / "screenshots"
LAUNCH_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
               "--disable-background-networking", "--disable-component-update", "--disable-sync",
               "--disable-dev-shm-usage"]
PASSWORD = "browser-pass-123"


def _missing() -> str | None:
    if not CHROMIUM.exists():
        return f"{CHROMIUM} not found (apt-get install chromium)"
    if not BUILD.exists():
        return "webapp/dist not built (make webapp)"
    return None


@pytest.fixture(scope="session")
def browser() -> Iterator:
    problem = _missing()
    if problem:
        if os.environ.get("CI"):
            pytest.fail(problem)
        pytest.skip(problem)
    from playwright.sync_api import sync_playwright

    # launch() gives Chromium a fresh temporary profile (its own --user-data-dir) every run.
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=LAUNCH_ARGS)
        yield browser
        browser.close()


@dataclass
class WebUser:
    email: str
    user_id: str


@pytest.fixture
def page(browser, live: LiveServer, request) -> Iterator:  # noqa: ANN001
    """A fresh browser context (its own storage) on the live server; console errors fail the test."""
    context = browser.new_context(base_url=live.base_url, viewport={"width": 1200, "height": 860})
    context.set_default_timeout(10_000)
    page = context.new_page()
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" and not _expected(m.text) else None)
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    yield page
    context.close()
    assert errors == [], f"console errors: {errors}"


def _expected(text: str) -> bool:
    # A refused request logs "Failed to load resource: ... 4xx" in Chromium: the tests that make
    # one on purpose (wrong password, another user's execution) check what the page shows instead.
    return "Failed to load resource" in text


def web_user(live: LiveServer, language: str = "en", tasks: list[str] | None = None) -> WebUser:
    with live.db() as db:
        user = create_user(db, name="Web User", email=f"w{uuid.uuid4().hex[:10]}@example.com", language_code=language)
        set_password(user, PASSWORD)
        grant(db, user, tasks if tasks is not None else ["test_email"])
        return WebUser(user.email, user.user_id)


def sign_in(page, user: WebUser) -> None:  # noqa: ANN001
    page.goto("/")
    page.get_by_label("Email").fill(user.email)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in", exact=True).click()
    page.locator(".who").wait_for()


def shot(page, name: str) -> None:  # noqa: ANN001
    """The screenshots of docs/webapp.md: taken at every run, written to docs/screenshots/ only with
    MOJODEX_UPDATE_SCREENSHOTS=1 (so a test run leaves the working tree clean), else to a temp folder."""
    update = os.environ.get("MOJODEX_UPDATE_SCREENSHOTS") == "1"
    folder = SHOTS if update else Path(tempfile.gettempdir()) / "mojodex-shots"
    folder.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(folder / f"{name}.png"))
