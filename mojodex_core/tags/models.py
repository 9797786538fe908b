"""Value types produced by the tag stream parser.

Kept separate from the parser so that consumers (socket emitters, DB writers)
can import the data shapes without pulling in the state machine.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

Channel = Literal["mojo", "title", "draft"]
"""Where a piece of live text may be shown: the chat message, or the draft's title/body."""

ReplyKind = Literal["question", "execution", "tool", "text"]

# Precedence when several kinds of tags occur in one reply (first wins).
KIND_PRECEDENCE: tuple[ReplyKind, ...] = ("execution", "tool", "question", "text")


@dataclass(frozen=True, slots=True)
class StreamDelta:
    """A piece of user-visible text, safe to forward to a client as-is.

    Never contains tag markup: the parser only emits a delta once it knows the
    characters are not (part of) a tag.
    """

    channel: Channel
    text: str


@dataclass(frozen=True, slots=True)
class ParsedReply:
    """Structured view of one complete LLM reply.

    Invariant: for each channel, the concatenation of all streamed deltas equals
    the matching field (``text`` for "mojo", ``title``/``draft`` with ``None``
    standing for "").
    """

    kind: ReplyKind
    # User-visible message text: prose outside tags + <ask_user_*> content.
    text: str
    # Content of <title>/<draft> inside <execution>; None if never opened.
    title: str | None
    draft: str | None
    # <user_language> content, stripped and lowercased; None if absent/empty.
    language: str | None
    # The raw reply exactly as received, markup included.
    text_with_tags: str
    # <missing_{name}> contents keyed by {name} (e.g. "primary_info"); last wins.
    missing_infos: dict[str, str] = field(default_factory=dict)
    # Names (lowercased) of tags opened outside hidden content, first-seen order.
    tags: list[str] = field(default_factory=list)
    # Names of tags never explicitly closed (still open at the end, or closed
    # implicitly by an outer closing tag), in the order they were opened.
    unclosed: list[str] = field(default_factory=list)
    # Stripped raw content of every top-level hidden tag, keyed by tag name, in
    # order. Tool tags land here (e.g. captured["tool_to_use"]).
    captured: dict[str, list[str]] = field(default_factory=dict)
