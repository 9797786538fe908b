"""The knowledge pieces every user-facing prompt renders, fitted to a token budget. Pure but for I/O edges.

Pieces, in the order they are kept when the budget is short (each optional; an empty or dropped
piece renders no heading):

1. global context: the user's local date, time and time zone;
2. the user profile (name, job, about me) and their company (name, description);
3. the assistant's knowledge file (``tasks_config/assistant_knowledge.md``).

The mobile flags (``audio_message``, ``tag_proper_nouns``) follow the session's platform.
"""

from __future__ import annotations

import zoneinfo
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta, timezone
from functools import lru_cache
from pathlib import Path

from sqlalchemy.orm import Session as DbSession

from mojodex_core.config import PROJECT_ROOT
from mojodex_core.db.models import User, UserProfile
from mojodex_core.execution.prompt import estimate_tokens, render
from mojodex_core.timezones import is_iana_zone

ASSISTANT_KNOWLEDGE_FILE = "assistant_knowledge.md"
DEFAULT_KNOWLEDGE_TOKENS = 1200
# A piece left less than this is dropped rather than cut to a stub.
MIN_PIECE_TOKENS = 12
ELLIPSIS = " […]"


@dataclass(frozen=True)
class PromptKnowledge:
    username: str
    language: str
    global_context: str | None = None
    # (label, value) pairs of the profile that are set, e.g. ("Job", "CTO").
    profile: list[tuple[str, str]] = field(default_factory=list)
    company: list[tuple[str, str]] = field(default_factory=list)
    assistant: str | None = None
    audio_message: bool = False
    tag_proper_nouns: bool = False


@lru_cache(maxsize=8)
def _read_knowledge_file(path: str, mtime: float) -> str:  # mtime: edits are picked up without a restart
    return Path(path).read_text(encoding="utf-8").strip()


def assistant_knowledge(tasks_config_dir: Path | None = None) -> str | None:
    path = (tasks_config_dir or PROJECT_ROOT / "tasks_config") / ASSISTANT_KNOWLEDGE_FILE
    try:
        return _read_knowledge_file(str(path), path.stat().st_mtime) or None
    except FileNotFoundError:
        return None


def local_now(user: User, profile: UserProfile | None, now: datetime | None = None) -> tuple[datetime, str]:
    """The user's local time and its zone: the profile's IANA zone with its offset now
    ("Europe/Paris, UTC+01:00"), else the account's offset ("UTC+01:00")."""
    now = now or datetime.now(UTC)
    # Checked on write; a zone stored before that check (e.g. "localtime", the server's zone) or removed
    # from the zone database since falls back to the offset.
    if profile is not None and is_iana_zone(profile.timezone):  # a listed zone loads
        local = now.astimezone(zoneinfo.ZoneInfo(profile.timezone))
        # The offset beside the name: "Etc/GMT+5" is UTC-05:00 (POSIX signs), and "Europe/Paris"
        # alone leaves the model to guess whether summer time applies.
        return local, f"{profile.timezone}, {_utc_offset(local.utcoffset() or timedelta(0))}"
    offset = timedelta(minutes=user.timezone_offset_minutes or 0)
    return now.astimezone(timezone(offset)), _utc_offset(offset)


def _utc_offset(offset: timedelta) -> str:
    minutes = int(offset.total_seconds()) // 60
    sign = "+" if minutes >= 0 else "-"
    return f"UTC{sign}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"


def global_context(user: User, profile: UserProfile | None, now: datetime | None = None) -> str:
    local, zone = local_now(user, profile, now)
    return f"The user's local date and time is {local.strftime('%A %d %B %Y, %H:%M')} (time zone {zone})."


def prompt_knowledge(
    user: User,
    profile: UserProfile | None,
    *,
    platform: str = "webapp",
    language: str | None = None,
    tasks_config_dir: Path | None = None,
    now: datetime | None = None,
) -> PromptKnowledge:
    """Every piece, unbudgeted. ``language``: the session's language, which wins over the profile's."""
    p = profile
    profile_pieces = [
        (label, value.strip())
        for label, value in (("Name", p and p.name), ("Job", p and p.job), ("About them", p and p.about_me))
        if value and value.strip()
    ]
    company = [
        (label, value.strip())
        for label, value in (("Company", p and p.company_name), ("What the company does", p and p.company_description))
        if value and value.strip()
    ]
    mobile = platform == "mobile"
    return PromptKnowledge(
        username=(p.name if p and p.name else user.name),
        language=language or (p.language if p and p.language else None) or user.language_code,
        global_context=global_context(user, profile, now),
        profile=profile_pieces,
        company=company,
        assistant=assistant_knowledge(tasks_config_dir),
        audio_message=mobile,
        tag_proper_nouns=mobile,
    )


def _cut(text: str, tokens: int) -> str:
    """``text`` cut at a word boundary to about ``tokens`` tokens."""
    chars = max(0, (tokens - 4) * 4 - len(ELLIPSIS))
    if len(text) <= chars:
        return text
    head = text[:chars]
    space = head.rfind(" ")
    return (head[:space] if space > chars // 2 else head).rstrip() + ELLIPSIS


def _fit_pairs(pairs: list[tuple[str, str]], left: int) -> tuple[list[tuple[str, str]], int]:
    kept = []
    for label, value in pairs:
        cost = estimate_tokens(f"- {label}: {value}")
        if cost > left:
            if left < MIN_PIECE_TOKENS:
                break
            value = _cut(value, left - estimate_tokens(f"- {label}: "))
            cost = left
        kept.append((label, value))
        left -= cost
    return kept, left


def fit_to_budget(knowledge: PromptKnowledge, budget_tokens: int) -> PromptKnowledge:
    """Keeps pieces in priority order while they fit; the last one that partly fits is cut."""
    left = budget_tokens
    context = knowledge.global_context
    if context:
        cost = estimate_tokens(context)
        context = context if cost <= left else None
        left -= cost if context else 0
    profile, left = _fit_pairs(knowledge.profile, left)
    company, left = _fit_pairs(knowledge.company, left)
    assistant = knowledge.assistant
    if assistant:
        cost = estimate_tokens(assistant)
        if cost > left:
            assistant = _cut(assistant, left) if left >= MIN_PIECE_TOKENS else None
    return replace(knowledge, global_context=context, profile=profile, company=company, assistant=assistant)


def knowledge_block(knowledge: PromptKnowledge, budget_tokens: int = DEFAULT_KNOWLEDGE_TOKENS) -> str:
    """The prompt section (``prompts/knowledge.jinja2``) for ``knowledge``, within the budget."""
    fitted = fit_to_budget(knowledge, budget_tokens)
    return render("knowledge.jinja2", knowledge=fitted, username=fitted.username)


def knowledge_block_for(
    db: DbSession,
    user: User,
    *,
    platform: str = "webapp",
    language: str | None = None,
    tasks_config_dir: Path | None = None,
    budget_tokens: int = DEFAULT_KNOWLEDGE_TOKENS,
    now: datetime | None = None,
) -> str:
    """One call for any prompt: loads the user's profile and renders the knowledge block."""
    profile = db.get(UserProfile, user.user_id)
    knowledge = prompt_knowledge(
        user, profile, platform=platform, language=language, tasks_config_dir=tasks_config_dir, now=now
    )
    return knowledge_block(knowledge, budget_tokens)
