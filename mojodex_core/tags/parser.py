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
  * unknown tags -> markup dropped, content routed like the parent's;
  * a <reasoning> still open at the end of the stream (the model never closed
    it) ends at the first tag with a meaning inside it, and what follows is
    parsed as the reply; with no such tag, its content is shown when the reply
    would otherwise show nothing and do nothing (``_end_unclosed``).

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

from mojodex_core.tags.lexer import TagLexer, TagToken, TextToken, Token
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
        self._acted = False  # a tag through which the reply acts (a tool call, a route) was opened
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

    def finish(
        self, *, calls_tools: bool = False, shown_before: bool = False, truncated: bool = False
    ) -> tuple[list[StreamDelta], ParsedReply]:
        """End of stream: close everything and build the ParsedReply.

        What the parser cannot see, for a <reasoning> left open (never shown if any holds):
        ``calls_tools``: the reply also called tools natively (the provider's
        function calls), so it acts: the reasoning is the why of those calls;
        ``shown_before``: an earlier LLM call of the same turn already showed
        text, so the turn's reply is not empty;
        ``truncated``: the stream was cut off by the token limit: the model never
        got to its reply, what it wrote is its private reasoning.
        """
        if self._finished:
            raise RuntimeError("finish() called twice")
        self._finished = True
        self._settle(self._lexer.finish())
        hide = calls_tools or shown_before or truncated
        while self._stack and self._stack[-1].spec.ends_at_known_tag and self._end_unclosed(hide):
            pass
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

    def _settle(self, rest: str) -> None:
        """The lexer's held-back candidate at the end of the stream."""
        if rest and self._stack and self._stack[-1].spec.role is Role.HIDDEN:
            self._stack[-1].capture.append(rest)
        # Otherwise `rest` is a tag cut off by the end of the stream (e.g.
        # "</draf"): it is markup, so it must not reach a client. It stays in
        # text_with_tags.

    def _end_unclosed(self, hide: bool) -> bool:
        """Ends the top element, a hidden tag left open to the end (<reasoning>).

        It ends at the first tag with a meaning in its content (any tag of the
        table but itself): the content before is its own, the rest is parsed as
        the reply; True, since that rest may leave another one open. With no such
        tag it holds the rest of the stream, which is then shown (markup dropped)
        if the reply would otherwise show nothing and do nothing, unless ``hide``
        (see finish): a reply is not lost because the model forgot a closing
        tag. Either way the content is captured, for the reasoning trace.
        Re-reading the content costs its
        length, once per such tag: a reply leaves one or two open.
        """
        el = self._stack[-1]
        lexer = TagLexer()
        tokens = lexer.feed("".join(el.capture))
        rest = lexer.finish()
        cut = next(
            (
                i for i, tok in enumerate(tokens)
                if isinstance(tok, TagToken) and not tok.closing and tok.name != el.name
                and self._spec(tok.name).role is not Role.TRANSPARENT
            ),
            None,
        )
        if cut is not None:
            el.capture = [tok.raw if isinstance(tok, TagToken) else tok.text for tok in tokens[:cut]]
        self._pop()
        self._unclosed.append((el.seq, el.name))
        if cut is not None:
            for tok in tokens[cut:]:
                self._on_token(tok)
            self._settle(rest)
            return True
        if not (hide or self._acted or any(self._values.values())):
            self._emit_text("mojo", "".join(tok.text for tok in tokens if isinstance(tok, TextToken)))
        return False

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

    def _spec(self, name: str) -> TagSpec:
        """The tag's effective spec here: TRANSPARENT when its ``within`` is not open."""
        spec = lookup(name)
        if spec.within is not None and not self._open_counts.get(spec.within):
            return TRANSPARENT_SPEC
        return spec

    def _open(self, name: str, parent: _Element | None) -> None:
        spec = self._spec(name)
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
        self._acted = self._acted or spec.action
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
