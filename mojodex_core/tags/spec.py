"""The tag table: the single place that says what each Mojodex tag means.

Adding a tag kind (e.g. a new tool tag) is one ``TagSpec`` entry in
``TAG_TABLE``; the parser has no tag names hard-coded except through this table.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Literal

from mojodex_core.tags.models import Channel, ReplyKind


class Role(Enum):
    """How the parser treats a tag's content."""

    # Content streamed on the "mojo" channel (the chat message).
    MOJO = "mojo"
    # Content streamed on the "title" / "draft" channel.
    TITLE = "title"
    DRAFT = "draft"
    # Structure only: loose text directly inside is hidden, but recognised
    # children (e.g. <title>/<draft> inside <execution>) keep their roles.
    CONTAINER = "container"
    # Never shown. Content is captured raw (nested markup is content, not
    # structure) so values such as tool JSON survive intact.
    HIDDEN = "hidden"
    # Unknown tag: markup stripped, content inherits the parent's routing.
    TRANSPARENT = "transparent"


ROLE_CHANNEL: dict[Role, Channel] = {
    Role.MOJO: "mojo",
    Role.TITLE: "title",
    Role.DRAFT: "draft",
}


@dataclass(frozen=True, slots=True)
class TagSpec:
    name: str
    role: Role
    # Reply kind this tag votes for (resolved with KIND_PRECEDENCE).
    reply_kind: ReplyKind | None = None
    # If True, ``name`` is a prefix: "missing_" matches <missing_meeting_date>.
    prefix: bool = False
    # The tag only has its role inside an open ancestor of this name;
    # elsewhere it is treated as an unknown (transparent) tag.
    within: str | None = None
    # Which ParsedReply field a HIDDEN tag's content feeds, besides `captured`.
    feeds: Literal["language", "missing_infos"] | None = None
    # A HIDDEN tag the model may forget to close (<reasoning>): still open at the end of the stream,
    # it ends at the first tag with a meaning inside it (what follows is the reply); with none, its
    # content is shown when the reply would otherwise show nothing and do nothing.
    ends_at_known_tag: bool = False
    # The reply acts through this tag (a tool call, a route): it needs no visible text.
    action: bool = False


TRANSPARENT_SPEC = TagSpec(name="", role=Role.TRANSPARENT)

TAG_TABLE: tuple[TagSpec, ...] = (
    TagSpec("user_language", Role.HIDDEN, feeds="language"),
    TagSpec("reasoning", Role.HIDDEN, ends_at_known_tag=True),
    # Home chat: the task the model routes the conversation to (mojodex_core.home_chat).
    TagSpec("route_to_task", Role.HIDDEN, action=True),
    # missing_infos key is the name minus the prefix: <missing_meeting_date>
    # -> "meeting_date", <missing_primary_info> -> "primary_info".
    TagSpec(
        "missing_", Role.HIDDEN, reply_kind="question", prefix=True, feeds="missing_infos"
    ),
    TagSpec("ask_user_primary_info", Role.MOJO, reply_kind="question"),
    TagSpec("ask_user_input", Role.MOJO, reply_kind="question"),
    TagSpec("execution", Role.CONTAINER, reply_kind="execution"),
    TagSpec("title", Role.TITLE, within="execution"),
    TagSpec("draft", Role.DRAFT, within="execution"),
    # Tool tags (<tool_to_use>, <tool_usage>, <tool_name>, ...) are hidden and
    # make the reply a "tool" reply; their content is in ParsedReply.captured.
    # A tool tag that must behave differently gets its own exact entry, which
    # wins over this prefix.
    TagSpec("tool_", Role.HIDDEN, reply_kind="tool", prefix=True, action=True),
)

_EXACT: dict[str, TagSpec] = {s.name: s for s in TAG_TABLE if not s.prefix}
# Longest prefix first so a more specific prefix entry wins.
_PREFIXES: tuple[TagSpec, ...] = tuple(
    sorted((s for s in TAG_TABLE if s.prefix), key=lambda s: -len(s.name))
)


def lookup(name: str) -> TagSpec:
    """Spec for a lowercased tag name; TRANSPARENT_SPEC if unknown.

    Exact entries win over prefixes. ``within`` is checked by the parser
    because it depends on the open-tag stack.
    """
    spec = _EXACT.get(name)
    if spec is not None:
        return spec
    for p in _PREFIXES:
        # A bare prefix (<missing_>) names nothing; treat it as unknown.
        if name.startswith(p.name) and len(name) > len(p.name):
            return p
    return TRANSPARENT_SPEC
