"""Incremental parser for the Mojodex tag protocol.

``TagStreamParser`` turns LLM output chunks into ``StreamDelta``s that are safe
to show live, and at the end into a ``ParsedReply``. ``parse_reply`` is the same
code path fed once.

Routing (what goes where) comes from ``spec.TAG_TABLE``:
  * text outside any tag, and inside MOJO tags (<ask_user_*>) -> "mojo";
  * inside <title>/<draft> within <execution> -> "title"/"draft";
  * loose text directly inside <execution> -> hidden;
  * HIDDEN tags (<user_language>, <missing_*>, <reasoning>, <tool_*>) -> never
    emitted; their raw content (nested markup included) is captured;
  * unknown tags -> markup dropped, content routed like the parent's.

Whitespace rule (documented contract, see README of the package in __init__):
each channel is made of *segments*; a segment is a maximal run of text between
boundaries of recognised (non-transparent) tags. Each segment is stripped, and
non-empty segments of the same channel are joined with "\\n". Incrementally
this means: drop leading whitespace of a segment, hold trailing whitespace back
until more non-space text arrives in the same segment, and emit the "\\n"
separator lazily when the next non-empty segment starts.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from mojodex_core.tags.lexer import TagLexer, TagToken, Token
from mojodex_core.tags.models import (
    KIND_PRECEDENCE,
    Channel,
    ParsedReply,
    ReplyKind,
    StreamDelta,
)
from mojodex_core.tags.spec import ROLE_CHANNEL, TRANSPARENT_SPEC, Role, TagSpec, lookup

SEGMENT_SEPARATOR = "\n"


@dataclass(slots=True)
class _Element:
    name: str
    spec: TagSpec  # effective spec (TRANSPARENT if `within` was not satisfied)
    channel: Channel | None  # where loose text inside goes; None = hidden
    seq: int  # opening order, to report `unclosed` in document order
    capture: list[str] = field(default_factory=list)  # HIDDEN only


class TagStreamParser:
    """Feed LLM output chunk by chunk; see module docstring for the rules."""

    def __init__(self) -> None:
        self._lexer = TagLexer()
        self._raw: list[str] = []
        self._stack: list[_Element] = []
        # name -> number of open elements with that name: O(1) "is it open?"
        # checks, so stray closing tags never trigger a stack scan.
        self._open_counts: dict[str, int] = {}
        self._seq = 0
        self._finished = False
        # Deltas produced by the current feed/finish call, merged per channel
        # run so callers get few, larger deltas.
        self._out: list[tuple[Channel, list[str]]] = []
        # Everything emitted so far, per channel: the final field values.
        self._values: dict[Channel, list[str]] = {"mojo": [], "title": [], "draft": []}
        self._opened: set[Channel] = set()
        # Whitespace state of the current segment (see module docstring).
        self._seg_channel: Channel | None = None
        self._seg_started = False
        self._pending_ws: list[str] = []
        # Reply facts.
        self._kinds: set[ReplyKind] = set()
        self._tags: dict[str, None] = {}  # ordered set
        self._unclosed: list[tuple[int, str]] = []
        self._captured: dict[str, list[str]] = {}
        self._language: str | None = None
        self._missing: dict[str, str] = {}

    # ------------------------------------------------------------------ API

    def feed(self, chunk: str) -> list[StreamDelta]:
        """Consume a chunk; return the text that is now safe to show."""
        if self._finished:
            raise RuntimeError("feed() after finish()")
        if chunk:
            self._raw.append(chunk)
            if "<" not in chunk and self._lexer.in_text:
                # Most chunks are plain words: what the lexer would return is TextToken(chunk).
                self._on_text(chunk)
            else:
                for tok in self._lexer.feed(chunk):
                    self._on_token(tok)
        return self._drain()

    def finish(self) -> tuple[list[StreamDelta], ParsedReply]:
        """End of stream: close everything and build the ParsedReply."""
        if self._finished:
            raise RuntimeError("finish() called twice")
        self._finished = True
        rest = self._lexer.finish()
        if rest and self._stack and self._stack[-1].spec.role is Role.HIDDEN:
            self._stack[-1].capture.append(rest)
        # Otherwise `rest` is a tag cut off by the end of the stream (e.g.
        # "</draf"): it is markup, so it must not reach a client. It stays in
        # text_with_tags.
        self._end_segment()
        while self._stack:
            el = self._pop()
            self._unclosed.append((el.seq, el.name))
        self._unclosed.sort()
        kind: ReplyKind = next(
            (k for k in KIND_PRECEDENCE if k in self._kinds), "text"
        )
        reply = ParsedReply(
            kind=kind,
            text="".join(self._values["mojo"]),
            title="".join(self._values["title"]) if "title" in self._opened else None,
            draft="".join(self._values["draft"]) if "draft" in self._opened else None,
            language=self._language,
            text_with_tags="".join(self._raw),
            missing_infos=dict(self._missing),
            tags=list(self._tags),
            unclosed=[name for _, name in self._unclosed],
            captured={k: list(v) for k, v in self._captured.items()},
        )
        return self._drain(), reply

    # ------------------------------------------------------------ structure

    def _on_text(self, text: str) -> None:
        """A text token (see _on_token)."""
        top = self._stack[-1] if self._stack else None
        if top is None:
            self._emit_text("mojo", text)
        elif top.spec.role is Role.HIDDEN:
            top.capture.append(text)  # raw mode
        elif top.channel is not None:
            self._emit_text(top.channel, text)

    def _on_token(self, tok: Token) -> None:
        if not isinstance(tok, TagToken):
            self._on_text(tok.text)
            return
        top = self._stack[-1] if self._stack else None
        if top is not None and top.spec.role is Role.HIDDEN:
            # Raw mode: only a closing tag of something open is structure;
            # anything else (nested tags included) is captured verbatim.
            if tok.closing and self._open_counts.get(tok.name):
                self._close(tok.name)
            else:
                top.capture.append(tok.raw)
            return
        if tok.closing:
            if self._open_counts.get(tok.name):
                self._close(tok.name)
            # else: stray closing tag; markup is dropped, nothing else to do.
        else:
            self._open(tok.name, top)

    def _open(self, name: str, parent: _Element | None) -> None:
        spec = lookup(name)
        if spec.within is not None and not self._open_counts.get(spec.within):
            spec = TRANSPARENT_SPEC
        role = spec.role
        parent_channel: Channel | None = parent.channel if parent is not None else "mojo"
        channel: Channel | None
        if role is Role.TRANSPARENT:
            channel = parent_channel
        else:
            channel = ROLE_CHANNEL.get(role)
            self._end_segment()
            if channel is not None and role is not Role.MOJO:
                self._opened.add(channel)
        if spec.reply_kind is not None:
            self._kinds.add(spec.reply_kind)
        self._tags[name] = None
        self._seq += 1
        self._stack.append(_Element(name, spec, channel, self._seq))
        self._open_counts[name] = self._open_counts.get(name, 0) + 1

    def _close(self, name: str) -> None:
        # Caller guarantees `name` is open. Everything opened after it is
        # closed implicitly and reported as unclosed. Amortised O(1): each
        # element is popped once.
        while True:
            el = self._pop()
            if el.name == name:
                return
            self._unclosed.append((el.seq, el.name))

    def _pop(self) -> _Element:
        el = self._stack.pop()
        self._open_counts[el.name] -= 1
        role = el.spec.role
        if role is not Role.TRANSPARENT:
            self._end_segment()
        if role is Role.HIDDEN:
            self._record_hidden(el)
        return el

    def _record_hidden(self, el: _Element) -> None:
        value = "".join(el.capture).strip()
        self._captured.setdefault(el.name, []).append(value)
        if el.spec.feeds == "language":
            self._language = value.lower() or None
        elif el.spec.feeds == "missing_infos":
            self._missing[el.name[len(el.spec.name):]] = value

    # ----------------------------------------------------------- whitespace

    def _end_segment(self) -> None:
        # Trailing whitespace held back for this segment is dropped for good.
        self._seg_channel = None
        self._seg_started = False
        self._pending_ws.clear()

    def _emit_text(self, channel: Channel, s: str) -> None:
        if channel != self._seg_channel:
            # Defensive: channels only change at recognised tag boundaries,
            # which already ended the segment.
            self._end_segment()
            self._seg_channel = channel
        if not self._seg_started:
            s = s.lstrip()
            if not s:
                return
            self._seg_started = True
            if self._values[channel]:
                self._push(channel, SEGMENT_SEPARATOR)
        body = s.rstrip()
        if not body:
            self._pending_ws.append(s)
            return
        if self._pending_ws:
            self._push(channel, "".join(self._pending_ws))
            self._pending_ws.clear()
        self._push(channel, body)
        if len(body) < len(s):
            self._pending_ws.append(s[len(body):])

    def _push(self, channel: Channel, text: str) -> None:
        self._values[channel].append(text)
        if self._out and self._out[-1][0] == channel:
            self._out[-1][1].append(text)
        else:
            self._out.append((channel, [text]))

    def _drain(self) -> list[StreamDelta]:
        out = [StreamDelta(ch, "".join(parts)) for ch, parts in self._out]
        self._out = []
        return out


def parse_reply(full_text: str) -> ParsedReply:
    """Parse a complete reply (same code path as streaming)."""
    parser = TagStreamParser()
    parser.feed(full_text)
    return parser.finish()[1]
