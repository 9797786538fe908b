"""Mojodex tag protocol: incremental, I/O-free parsing of LLM replies.

Usage::

    parser = TagStreamParser()
    for chunk in llm_stream:
        for delta in parser.feed(chunk):
            send(delta.channel, delta.text)   # never contains tag markup
    tail, reply = parser.finish()

Contract:
  * For each channel, "".join(delta.text) == the matching ParsedReply field
    ("mojo" -> text, "title" -> title or "", "draft" -> draft or "").
  * Whitespace: a channel is made of segments (text runs between recognised
    tags). Each segment is stripped; non-empty segments are joined with "\\n".
  * Results never depend on how the stream is chunked.
  * A possible tag cut off at the very end of the stream is dropped from the
    channels (kept in text_with_tags).
  * A <reasoning> still open at the end ends at the first tag with a meaning in
    it; with none, its content is the reply's text when nothing else would be
    shown or done, and never when the caller says the reply called tools, an
    earlier call of the turn showed text, or the stream was cut off by the
    token limit (``finish(calls_tools=, shown_before=, truncated=)``). Its
    content is captured either way.
  * New tag kinds: add one TagSpec to spec.TAG_TABLE.
"""

from mojodex_core.tags.models import Channel, ParsedReply, ReplyKind, StreamDelta
from mojodex_core.tags.parser import TagStreamParser, parse_reply
from mojodex_core.tags.spec import TAG_TABLE, Role, TagSpec, lookup

__all__ = [
    "TAG_TABLE",
    "Channel",
    "ParsedReply",
    "ReplyKind",
    "Role",
    "StreamDelta",
    "TagSpec",
    "TagStreamParser",
    "lookup",
    "parse_reply",
]
