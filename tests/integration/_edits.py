"""Shared set-up for the text edit, chaining, title and usage tests."""

from __future__ import annotations

import copy
from pathlib import Path

from mojodex_core.db import transaction
from mojodex_core.task_loader import store_spec
from mojodex_core.task_spec import validate_spec
from mojodex_core.text_edit.spec import validate_text_edit_action
from mojodex_core.text_edit.store import store_text_edit_action, text_edit_action_files
from tests.support.live import REPO_ROOT, TEST_TASK, LiveServer

SHIPPED_ACTIONS = ("shorter", "more_formal", "more_casual", "translate")
PREFIX = "Send these minutes to the whole team:"

# A task whose result offers test_email as its predefined action (chaining).
MINUTES_TASK = copy.deepcopy(TEST_TASK)
MINUTES_TASK.update(
    name_for_system="test_minutes",
    definition_for_system="The user needs meeting minutes",
    output_type="meeting_minutes",
    infos_to_extract=[],
    predefined_actions=[{
        "task_name": "test_email",
        "displayed_data": [{"language_code": "en", "data": {
            "name": "Email the minutes", "button_text": "Email", "message_prefix": PREFIX}}],
    }],
)


def load_edit_actions(live: LiveServer) -> None:
    files = text_edit_action_files([Path(REPO_ROOT / "tasks_config")])
    with transaction(live.platform.session_factory) as db:
        for path in files:
            import json

            store_text_edit_action(db, validate_text_edit_action(json.loads(path.read_text(encoding="utf-8"))))


def load_minutes_task(live: LiveServer) -> None:
    with transaction(live.platform.session_factory) as db:
        store_spec(db, validate_spec(MINUTES_TASK), "upsert")


def edited(title: str, body: str) -> str:
    return f"<execution><title>{title}</title><draft>{body}</draft></execution>"
