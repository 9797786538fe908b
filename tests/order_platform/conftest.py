"""Live servers for order tasks: no LLM (deterministic), the shipped order specs loaded.

Redis is used when TEST_REDIS_URL is set (the whole suite then runs against it), else the
database alone keeps the live state.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from backend.context import Platform
from mojodex_core.db import transaction
from mojodex_core.task_loader import store_spec
from mojodex_core.task_spec import load_spec_file
from tests.support.live import REPO_ROOT, LiveServer, live_settings, serving

ORDER_TASKS = ("order_bagel_shop", "order_drive_thru", "order_pizzeria")
WEBHOOK_SECRET = "test-webhook-secret-0123456789"
REDIS_URL = os.environ.get("TEST_REDIS_URL") or None


def store_order_specs(factory) -> None:  # noqa: ANN001 - a sessionmaker
    """The shipped order tasks, stored (upserted) in the factory's database."""
    with transaction(factory) as db:
        for name in ORDER_TASKS:
            store_spec(db, load_spec_file(Path(REPO_ROOT / "tasks_config" / f"{name}.json")), "upsert")


def load_order_specs(platform: Platform) -> None:
    store_order_specs(platform.session_factory)


def order_settings(database_url: str, llm_base_url: str | None = None, **changes):  # noqa: ANN003, ANN201
    settings = live_settings(database_url, llm_base_url)
    values = {
        "redis_url": REDIS_URL,
        "pos_webhook_secret": WEBHOOK_SECRET,
        "pos_webhook_attempts": 4,
        "pos_webhook_backoff_s": 0.05,
        "pos_webhook_timeout_s": 2.0,
    }
    return dataclasses.replace(settings, **{**values, **changes})


@pytest.fixture(scope="session")
def order_server(database_url: str, live_server) -> Iterator[LiveServer]:  # noqa: ANN001
    """Deterministic order turns (no LLM configured)."""
    with serving(order_settings(database_url), configure=load_order_specs) as live:
        assert live.platform.llm is None
        yield live


@pytest.fixture
def orders(order_server: LiveServer) -> Iterator[LiveServer]:
    yield order_server
    order_server.wait_idle(10)
