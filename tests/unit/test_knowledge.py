"""The knowledge block: each piece optional, no empty heading, within the token budget."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace

import pytest

from mojodex_core.execution.prompt import estimate_tokens, render
from mojodex_core.knowledge import knowledge_block, prompt_knowledge
from mojodex_core.knowledge.context import fit_to_budget, global_context
from mojodex_core.knowledge.profile import ProfileError, parse_update

NOW = datetime(2026, 3, 4, 23, 30, tzinfo=UTC)
USER = SimpleNamespace(user_id="u1", name="Ann Account", language_code="en", timezone_offset_minutes=60)
PROFILE = SimpleNamespace(
    name="Ann", language="fr", timezone="America/New_York", company_name="Hoomano",
    company_description="Builds assistants", job="CTO", about_me="Likes short emails",
)
EMPTY_PROFILE = SimpleNamespace(**{k: None for k in vars(PROFILE)})
TASK = SimpleNamespace(
    definition_for_system="Write an email", output_format_instruction_title="SUBJECT",
    output_format_instruction_draft="BODY", final_instruction=None,
)
HEADINGS = ("WHO YOU ARE", "GLOBAL CONTEXT", "WHAT YOU KNOW ABOUT", "'S COMPANY", "HOW YOU WRITE")


def _instruct(block: str) -> str:
    return render("instruct_task.jinja2", knowledge_block=block, username="Ann", language="en",
                  local_datetime="unused", task=TASK, inputs=[], infos_to_extract=[], produced_text=None)


def _no_empty_heading(text: str) -> None:
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if any(h in line for h in HEADINGS):
            assert i + 1 < len(lines) and lines[i + 1].strip(), f"empty heading {line!r}"


def test_with_a_profile_every_piece_is_rendered(tmp_path: Path):
    (tmp_path / "assistant_knowledge.md").write_text("You are Mojo, made by Hoomano.\n")
    knowledge = prompt_knowledge(USER, PROFILE, tasks_config_dir=tmp_path, now=NOW)
    text = _instruct(knowledge_block(knowledge))
    assert "WHO YOU ARE\nYou are Mojo, made by Hoomano." in text
    # the profile's zone wins over the account's offset: 23:30 UTC is 18:30 in New York
    assert "Wednesday 04 March 2026, 18:30 (time zone America/New_York, UTC-05:00)" in text
    assert "WHAT YOU KNOW ABOUT ANN\n- Name: Ann\n- Job: CTO\n- About them: Likes short emails" in text
    assert "ANN'S COMPANY\n- Company: Hoomano\n- What the company does: Builds assistants" in text
    assert "Today is" not in text  # the global context replaces the bare date line
    assert knowledge.username == "Ann" and knowledge.language == "fr"
    assert "HOW YOU WRITE" not in text
    _no_empty_heading(text)


@pytest.mark.parametrize("profile", [None, EMPTY_PROFILE])
def test_without_a_profile_no_profile_heading_is_left(tmp_path: Path, profile):
    knowledge = prompt_knowledge(USER, profile, tasks_config_dir=tmp_path, now=NOW)  # no knowledge file either
    text = _instruct(knowledge_block(knowledge))
    for heading in ("WHO YOU ARE", "WHAT YOU KNOW ABOUT", "COMPANY", "HOW YOU WRITE"):
        assert heading not in text
    # the account's +01:00 offset
    assert "Thursday 05 March 2026, 00:30 (time zone UTC+01:00)" in text
    assert knowledge.username == "Ann Account" and knowledge.language == "en"
    _no_empty_heading(text)


@pytest.mark.parametrize(
    ("zone", "expected"),
    [
        # POSIX signs: Etc/GMT+5 is five hours *behind* UTC; the offset says so beside the name.
        ("Etc/GMT+5", "Wednesday 04 March 2026, 18:30 (time zone Etc/GMT+5, UTC-05:00)"),
        ("Etc/GMT-14", "Thursday 05 March 2026, 13:30 (time zone Etc/GMT-14, UTC+14:00)"),
        ("Asia/Kolkata", "Thursday 05 March 2026, 05:00 (time zone Asia/Kolkata, UTC+05:30)"),
        ("UTC", "Wednesday 04 March 2026, 23:30 (time zone UTC, UTC+00:00)"),
    ],
)
def test_the_zone_is_given_with_its_offset_from_utc(zone, expected):
    text = global_context(USER, SimpleNamespace(**{**vars(PROFILE), "timezone": zone}), now=NOW)
    assert expected in text


def test_the_offset_follows_summer_time():
    summer = datetime(2026, 7, 1, 12, 0, tzinfo=UTC)
    assert "08:00 (time zone America/New_York, UTC-04:00)" in global_context(USER, PROFILE, now=summer)


def test_the_shipped_assistant_knowledge_file_is_rendered():
    text = knowledge_block(prompt_knowledge(USER, None, now=NOW))
    assert text.startswith("WHO YOU ARE\nYou are Mojo")


def test_mobile_sets_the_spoken_style_and_proper_noun_flags(tmp_path: Path):
    knowledge = prompt_knowledge(USER, None, platform="mobile", tasks_config_dir=tmp_path, now=NOW)
    assert knowledge.audio_message and knowledge.tag_proper_nouns
    text = knowledge_block(knowledge)
    assert "HOW YOU WRITE" in text and "*Paris*" in text and "read aloud" in text
    web = knowledge_block(prompt_knowledge(USER, None, platform="webapp", tasks_config_dir=tmp_path, now=NOW))
    assert "HOW YOU WRITE" not in web


def test_the_block_stays_within_the_budget_keeping_pieces_in_priority_order(tmp_path: Path):
    (tmp_path / "assistant_knowledge.md").write_text("knowledge " * 2000)
    long_profile = SimpleNamespace(**{**vars(PROFILE), "about_me": "detail " * 280})
    knowledge = prompt_knowledge(USER, long_profile, tasks_config_dir=tmp_path, now=NOW)
    full = knowledge_block(knowledge, budget_tokens=100_000)
    for budget in (60, 200, 400, 1200):
        text = knowledge_block(knowledge, budget_tokens=budget)
        # headings and labels add a little over the pieces' own budget
        assert estimate_tokens(text) <= budget + 60, budget
        assert len(text) < len(full)
        assert "GLOBAL CONTEXT" in text  # first in priority, always kept
        _no_empty_heading(text)
    small = fit_to_budget(knowledge, 60)
    assert small.assistant is None  # last in priority: dropped, with its heading
    assert "WHO YOU ARE" not in knowledge_block(knowledge, budget_tokens=60)
    assert fit_to_budget(knowledge, 1200).assistant.endswith("[…]")


def test_profile_updates_are_validated():
    assert parse_update({"name": "  Ann ", "job": ""}) == {"name": "Ann", "job": None}
    for body, field in [
        ({"language": "french"}, "language"),
        ({"timezone": "Mars/Olympus"}, "timezone"),
        ({"about_me": "x" * 2001}, "about_me"),
        ({"name": 12}, "name"),
        ({"salary": "1"}, "salary"),
        (["name"], "body"),
    ]:
        with pytest.raises(ProfileError) as info:
            parse_update(body)
        assert info.value.field == field
