"""Prompt rendering (a template that fails is an error) and conversation windowing."""

from __future__ import annotations

from datetime import UTC, datetime
from types import SimpleNamespace

import pytest

from mojodex_core.execution.prompt import (
    ChatMessage,
    PromptError,
    estimate_tokens,
    local_datetime,
    render,
    window_newest_first,
)

TASK = SimpleNamespace(
    definition_for_system="Write an email", output_format_instruction_title="SUBJECT",
    output_format_instruction_draft="BODY", final_instruction=None,
)
CONTEXT = {"username": "Ann", "language": "en", "local_datetime": "Monday", "task": TASK, "inputs": [],
           "infos_to_extract": [], "produced_text": None}


def test_instruct_prompt_renders():
    text = render("instruct_task.jinja2", **CONTEXT)
    assert "You are Mojo" in text and "Write an email" in text and "<draft>BODY</draft>" in text


@pytest.mark.parametrize("missing", ["username", "task", "inputs", "language"])
def test_a_missing_variable_is_an_error(missing: str):
    context = {k: v for k, v in CONTEXT.items() if k != missing}
    with pytest.raises(PromptError, match=rf"instruct_task.jinja2 failed to render: .*{missing}"):
        render("instruct_task.jinja2", **context)


def test_a_missing_attribute_is_an_error():
    with pytest.raises(PromptError):
        render("instruct_task.jinja2", **{**CONTEXT, "infos_to_extract": [{"info_name": "who"}]})


def test_an_empty_render_or_an_unknown_template_is_an_error():
    with pytest.raises(PromptError, match="rendered empty"):
        render("form_start_message.jinja2", inputs=[])
    with pytest.raises(PromptError):
        render("no_such_template.jinja2")


def window(messages: list[ChatMessage], budget: int) -> list[ChatMessage]:
    return window_newest_first(reversed(messages), budget)


def _msgs(*spec: tuple[str, int]) -> list[ChatMessage]:
    # content of n chars costs n // 4 + 4 tokens
    return [ChatMessage(role, f"{i}" + "x" * (size - len(str(i)))) for i, (role, size) in enumerate(spec)]


def test_window_keeps_everything_under_budget():
    messages = _msgs(("user", 40), ("assistant", 40), ("user", 40))
    assert window(messages, 1000) == messages
    assert window([], 10) == []


def test_window_keeps_the_latest_messages_that_fit_and_opens_with_the_user():
    messages = _msgs(("user", 40), ("assistant", 40), ("user", 40), ("assistant", 40), ("user", 40))
    assert [estimate_tokens(m.content) for m in messages] == [14] * 5
    assert window(messages, 42) == messages[2:]  # 3 fit
    assert window(messages, 56) == messages[2:]  # 4 fit, but not starting with an answer
    assert window(messages, 70) == messages


def test_window_always_keeps_the_last_message():
    messages = _msgs(("user", 40), ("assistant", 40), ("user", 4000))
    assert window(messages, 50) == messages[-1:]


def test_local_datetime_applies_the_offset():
    now = datetime(2024, 3, 4, 23, 30, tzinfo=UTC)
    assert local_datetime(60, now) == "Tuesday 05 March 2024, 00:30"
    assert local_datetime(-30, now) == "Monday 04 March 2024, 23:00"


def test_window_of_a_newest_first_conversation_reads_no_further_than_what_fits():
    messages = _msgs(("user", 40), ("assistant", 40), ("user", 40), ("assistant", 40), ("user", 40))
    read: list[ChatMessage] = []

    def newest_first():  # noqa: ANN202
        for message in reversed(messages):
            read.append(message)
            yield message

    assert window_newest_first(newest_first(), 42) == messages[2:]
    assert len(read) == 4  # the three that fit and the one that does not
