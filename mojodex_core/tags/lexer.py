"""Incremental tokenizer: splits a character stream into text and tag tokens.

A tag is exactly ``<name>`` or ``</name>`` with
``name = [A-Za-z_][A-Za-z0-9_-]*`` (at most ``MAX_NAME_LEN`` chars). Anything
else that starts with ``<`` is text, and is released as soon as it is known not
to be a tag. Only a possible tag prefix (``<``, ``</``, ``</ask_us``) is ever
held back, so the hold-back is bounded by ``MAX_NAME_LEN + 2`` characters.

Each input character is examined a constant number of times (text runs are
skipped with ``str.find``), so feeding n characters costs O(n) regardless of
how the stream is chunked.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeAlias

MAX_NAME_LEN = 64

_NAME_START = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_")
_NAME_CHARS = _NAME_START | frozenset("0123456789-")

# Candidate states; TEXT means "not inside a possible tag".
_TEXT, _LT, _SLASH, _NAME = range(4)


@dataclass(frozen=True, slots=True)
class TextToken:
    text: str


@dataclass(frozen=True, slots=True)
class TagToken:
    # Lowercased so matching is case-insensitive (<Draft> closes with </draft>).
    name: str
    closing: bool
    # The exact source markup, kept for raw capture inside hidden tags.
    raw: str


Token: TypeAlias = TextToken | TagToken


class TagLexer:
    """Feed chunks, get tokens. Output never depends on chunk boundaries."""

    def __init__(self) -> None:
        self._state = _TEXT
        self._closing = False
        # Characters of the current candidate, from its '<' on.
        self._pending: list[str] = []

    @property
    def in_text(self) -> bool:
        """No possible tag is held back: a chunk without "<" is then exactly one text token."""
        return self._state == _TEXT

    @property
    def pending(self) -> str:
        """The held-back possible-tag prefix (empty when not in a candidate)."""
        return "".join(self._pending)

    def feed(self, chunk: str) -> list[Token]:
        out: list[Token] = []
        text: list[str] = []  # text accumulated since the last tag token
        i, n = 0, len(chunk)
        while i < n:
            if self._state == _TEXT:
                j = chunk.find("<", i)
                if j < 0:
                    text.append(chunk[i:])
                    break
                if j > i:
                    text.append(chunk[i:j])
                self._state = _LT
                self._pending = ["<"]
                i = j + 1
                continue
            c = chunk[i]
            tag = self._step(c)
            if tag is None:
                i += 1
            elif tag is False:
                # Not a tag: release the candidate as text and re-read the
                # failing char in TEXT state (it may be a new '<').
                text.append("".join(self._pending))
                self._reset()
            else:
                if text:
                    out.append(TextToken("".join(text)))
                    text = []
                out.append(tag)
                self._reset()
                i += 1
        if text:
            out.append(TextToken("".join(text)))
        return out

    def finish(self) -> str:
        """End of stream; returns the unresolved candidate (possibly "").

        The caller decides what to do with it: a truncated ``</ask_us`` at the
        very end is treated as broken markup, not as prose.
        """
        rest = self.pending
        self._reset()
        return rest

    def _reset(self) -> None:
        self._state = _TEXT
        self._closing = False
        self._pending = []

    def _step(self, c: str) -> TagToken | bool | None:
        """Advance the candidate by one char.

        Returns None (consumed, still a candidate), False (not a tag; char not
        consumed) or the completed TagToken (char consumed).
        """
        st = self._state
        if st == _LT:
            if c == "/":
                self._closing = True
                self._state = _SLASH
            elif c in _NAME_START:
                self._state = _NAME
            else:
                return False
        elif st == _SLASH:
            if c not in _NAME_START:
                return False
            self._state = _NAME
        else:  # _NAME
            if c == ">":
                self._pending.append(c)
                raw = "".join(self._pending)
                name = raw[2:-1] if self._closing else raw[1:-1]
                return TagToken(name=name.lower(), closing=self._closing, raw=raw)
            name_len = len(self._pending) - (2 if self._closing else 1)
            if c not in _NAME_CHARS or name_len >= MAX_NAME_LEN:
                return False
        self._pending.append(c)
        return None
