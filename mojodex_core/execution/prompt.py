"""Renders the instruct prompt and windows the conversation to a token budget."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone
from functools import lru_cache
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, StrictUndefined, TemplateError

PROMPTS_DIR = Path(__file__).resolve().parent.parent / "prompts"


class PromptError(Exception):
    """A template failed to render: an error, never an empty prompt."""


@lru_cache(maxsize=1)
def _environment() -> Environment:
    # StrictUndefined: a missing variable is an error, not a silently empty section. The templates
    # ship with the code: no stat of the file at every render (auto_reload) to see if it changed.
    return Environment(
        loader=FileSystemLoader(PROMPTS_DIR),
        auto_reload=False,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=False,
        autoescape=False,
    )


def render(template_name: str, **context: Any) -> str:
    try:
        text = _environment().get_template(template_name).render(**context).strip()
    except TemplateError as exc:
        raise PromptError(f"prompt {template_name} failed to render: {exc}") from exc
    if not text:
        raise PromptError(f"prompt {template_name} rendered empty")
    return text


@lru_cache(maxsize=1)
def instruct_grammar() -> str:
    return (PROMPTS_DIR / "instruct_reply.gbnf").read_text()


def estimate_tokens(text: str) -> int:
    # ~4 characters a token for English-like text, plus the per-message overhead.
    return len(text) // 4 + 4


@dataclass(frozen=True)
class ChatMessage:
    role: str  # "user" | "assistant"
    content: str


def window_newest_first(newest_first: Iterable[ChatMessage], budget_tokens: int) -> list[ChatMessage]:
    """The most recent messages that fit the budget, oldest first, of a conversation given newest
    message first; the newest is always kept, and nothing after the first message that does not
    fit is read."""
    kept: list[ChatMessage] = []
    used = 0
    for message in newest_first:
        cost = estimate_tokens(message.content)
        if kept and used + cost > budget_tokens:
            break
        kept.append(message)
        used += cost
    kept.reverse()
    # Chat APIs expect the conversation to open with the user.
    while len(kept) > 1 and kept[0].role != "user":
        kept.pop(0)
    return kept


def local_datetime(offset_minutes: int, now: datetime | None = None) -> str:
    now = now or datetime.now(UTC)
    local = now.astimezone(timezone(timedelta(minutes=offset_minutes)))
    return local.strftime("%A %d %B %Y, %H:%M")
