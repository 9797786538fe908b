"""A live server for workflow tasks: the shipped workflows loaded, a short step heartbeat so a
crashed process is detected within a test."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from backend.context import Platform
from mojodex_core.db import transaction
from mojodex_core.task_loader import store_spec, validate_for_storage
from tests.support.live import REPO_ROOT, LiveServer, live_settings, serving

WORKFLOWS = ("write_poem", "generate_documentation_from_video")
HEARTBEAT_S = 0.2
LAPSE_S = 1.5


def load_workflows(platform: Platform) -> None:
    with transaction(platform.session_factory) as db:
        for name in WORKFLOWS:
            data = json.loads(Path(REPO_ROOT / "tasks_config" / f"{name}.json").read_text())
            store_spec(db, validate_for_storage(data, REPO_ROOT / "tasks_config"), "upsert")


def workflow_settings(database_url: str, llm_base_url: str | None):  # noqa: ANN201
    return dataclasses.replace(live_settings(database_url, llm_base_url), workflow_heartbeat_s=HEARTBEAT_S,
                               workflow_heartbeat_lapse_s=LAPSE_S)


@pytest.fixture(scope="session")
def workflow_server(database_url: str, scripted_llm, live_server) -> Iterator[LiveServer]:  # noqa: ANN001
    with serving(workflow_settings(database_url, scripted_llm.base_url), configure=load_workflows) as live:
        yield live


@pytest.fixture
def wf(workflow_server: LiveServer, llm) -> Iterator[LiveServer]:  # noqa: ANN001
    yield workflow_server
    workflow_server.wait_idle(10)
