"""The draft completion in Core stores the same rows and sends the same draft_message, byte for
byte, as the ORM code it replaced (frozen in tests/turn/_legacy_draft.py): the first version
(the produced_text created with it), a later one after the user's edit (or one committed while
the draft streamed), a second draft on a completed and titled execution, and a title longer than
the execution's column."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from sqlalchemy import select

from mojodex_core.db import transaction
from mojodex_core.db.models import Message, ProducedText, ProducedTextVersion, UserTaskExecution
from mojodex_core.execution.produced_text import append_version, version_payload
from tests.turn._harness import DRAFT, Step, Turns
from tests.turn._legacy_draft import LegacyDraftTurn

LONG = "T" * 300
ISO_UTC = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{6})?\+00:00$")


def _draft(title: str, body: str) -> str:
    return f"<execution><title>{title}</title><draft>{body}</draft></execution>"


def _edit(turns: Turns, pk: int, user_id: str) -> None:
    """A user's edit between two drafts, through the ORM writer every other caller keeps."""
    with transaction(turns.factory) as db:
        execution = db.get(UserTaskExecution, pk)
        append_version(db, execution, user_id, title="Edited", production="by hand", origin="user")


def _scenario(turns: Turns, name: str, task: str) -> dict[str, Any]:
    """Runs the scenario on a fresh execution; what it stored and sent, with its own pks and
    times checked against its rows and replaced by placeholders."""
    user = turns.user()
    pk, session_id = turns.execution(user, task)
    first = len(turns.sent.events)
    replies = {
        "first": [DRAFT],
        "after_edit": [DRAFT, "edit", _draft(" Second ", " Better text.\n")],
        "again": [DRAFT, _draft("Other", "Again.")],
        "long_title": [_draft(LONG, "Body.")],
        "titled_before": ["name it", DRAFT],  # completed, the title kept
        "named_later": [_draft("", "Untitled."), DRAFT],  # completed without a title, named by the second
        "edit_during_stream": [DRAFT, Step(_draft("Third", "Last."), during=lambda: _edit(turns, pk, user))],
    }[name]
    for reply in replies:
        if reply == "edit":
            _edit(turns, pk, user)
            continue
        if reply == "name it":
            with transaction(turns.factory) as db:
                db.get(UserTaskExecution, pk).title = "Named by the title job"
            continue
        turns.llm.script(reply)
        turns.run(session_id, turns.message(session_id, pk, "write it"))
    sent = [p for _s, n, p in turns.sent.events[first:] if n == "draft_message"]
    with turns.factory() as db:
        execution = db.get(UserTaskExecution, pk)
        produced = db.scalar(select(ProducedText).where(ProducedText.user_task_execution_fk == pk))
        versions = list(db.scalars(select(ProducedTextVersion).where(
            ProducedTextVersion.produced_text_fk == produced.produced_text_pk)
            .order_by(ProducedTextVersion.version_index)))
        answers = {m.message_pk: m for m in db.scalars(
            select(Message).where(Message.session_id == session_id, Message.sender == "assistant"))}
        rows = {
            "execution": (execution.status, execution.title, execution.end_date is not None),
            "produced": (produced.user_id == user, produced.created_at is not None),
            "versions": [(v.version_index, v.title, v.production, v.origin, v.text_type_fk,
                          v.message_fk is not None and answers[v.message_fk].data
                          == {"produced_text_version_pk": v.produced_text_version_pk},
                          v.created_at is not None) for v in versions],
        }
        by_pk = {v.produced_text_version_pk: v for v in versions}
        payloads = []
        for payload in sent:
            version = by_pk[payload["produced_text_version_pk"]]
            # The payload is the one the ORM's version_payload makes of the stored row (but for the
            # time: the ORM reports the value it sent, SQLite gives it back without its zone).
            stored = version_payload(version, produced, payload["text_type"])
            assert {k: v for k, v in payload.items() if k in stored and k != "created_at"} == {
                k: v for k, v in stored.items() if k != "created_at"}
            assert ISO_UTC.match(payload["created_at"]), payload["created_at"]
            assert payload["message_pk"] == version.message_fk
            assert answers[payload["message_pk"]].seq == payload["seq"]
            assert (payload["session_id"], payload["user_task_execution_pk"]) == (session_id, pk)
            masked = dict(payload, produced_text_pk=0, produced_text_version_pk=0, message_pk=0, seq=0,
                          user_message_pk=0, user_task_execution_pk=0, session_id="", created_at="")
            payloads.append(json.dumps(masked, ensure_ascii=False).encode())
    return {"rows": rows, "payloads": payloads}


@pytest.mark.parametrize("task", ["turn_prompt_email", "turn_prompt_minutes"])
@pytest.mark.parametrize("name", ["first", "after_edit", "again", "long_title", "titled_before", "named_later",
                                  "edit_during_stream"])
def test_the_core_draft_path_stores_and_sends_what_the_orm_path_did(make_turns, name, task):
    core = make_turns()
    legacy = make_turns()
    legacy.turn = LegacyDraftTurn(legacy.factory, legacy.events, legacy.llm, coalesce_ms=0)
    got = _scenario(core, name, task)
    want = _scenario(legacy, name, task)
    assert got == want
    assert got["payloads"]  # the scenario sent drafts
