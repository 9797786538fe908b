"""Grammar-pass handlers for counts: where a number, an article ("a", "an") or "the other" / "another" /
"the rest" starts a new item frame, and where it does not ("a two topping pizza", "the large one with olives",
"a small one", "with a thin crust", "a combo with a coke").

A mixin of the segmenter (:mod:`frames`): it uses the segmenter's state (``out``, ``cur``, ``neg``...) and its
``_new_frame`` / ``_end_neg``.
"""

from __future__ import annotations

from .frame_doubts import DoubtHandlers
from .lexicon import Chunk

_ORDINALS = {"first": 0, "second": 1, "third": 2, "fourth": 3, "last": -1}


class CountHandlers(DoubtHandlers):
    skip_to: int

    def on_num(self, i: int, ch: Chunk) -> None:
        nxt = self._next(i)
        if nxt is not None and nxt.kind == "count_word":  # "a two topping pizza"
            self.skip_to = self.chunks.index(nxt)
            return
        article = ch.text in ("a", "an")
        cur = self.cur
        prev = self._prev(i)
        if self.on_the_one(ch, prev):
            return
        if (ch.text in ("one", "1") and cur is not None and cur.definite and cur.anchor is None
                and cur.number is None and cur.attrs and prev is not None and prev.kind == "menu"):
            return  # "the large one with olives": a reference described by its values, not a count
        if (ch.text in ("one", "1") and cur is not None and cur.anchor is None and cur.number is not None
                and cur.article and cur.attrs and prev is not None and prev.kind == "menu" and not cur.after_with):
            cur.anchor, cur.has_noun = cur.inherit, cur.inherit is not None  # "a small one": pronoun
            cur.pronoun = True  # with nothing before it in the message, the parser finds its type in the order
            return
        if ch.text in ("one", "1") and self.neg and prev is not None and prev.kind == "menu":
            return  # "not the onion one": a pronoun inside the negation
        after_and = prev is not None and prev.kind == "and"
        if cur is None or (cur.anchor is None and cur.number is None and not cur.attrs):
            if prev is None or prev.kind != "neg":  # "don't want a latte": the negation goes on
                self._end_neg()
            frame = cur or self._new_frame()
            frame.number, frame.article, frame.split_child = ch.payload, article, True
            frame.after_and = after_and
            frame.follows_with = prev is not None and prev.kind == "with"
            return
        ahead = self._lookahead_anchor(i)
        if article:
            if not ahead and not self._restates_field(i, cur) and not self._elided_noun(i, cur):
                self.on_and_a_part(i, prev, cur)
                return  # "with a thin crust": the article belongs to an attribute
            if cur.anchor and cur.with_seen and prev is not None and prev.kind == "with" and self._absorbs(cur, ahead):
                return  # "a combo with a coke": the drink is part of the combo ("... with fries and a coke" is not)
        elif not (cur.anchor or cur.number is not None or ahead):
            cur.number = ch.payload
            return
        self._end_neg()
        self._new_frame(number=ch.payload, article=article, split_child=True, after_and=after_and)

    def on_other(self, i: int, ch: Chunk) -> None:
        """ "the other", "another", "the rest": a further item, of the type said before unless named."""
        self._end_neg()
        cur = self.cur
        if cur is not None and cur.anchor is None and cur.number is None and not cur.attrs:
            frame = cur
        else:
            frame = self._new_frame()
        frame.number, frame.rest, frame.split_child = ch.payload, ch.payload is None, True
        prev = self._prev(i)
        frame.after_and = prev is not None and prev.kind == "and"
        frame.ordinal = next((_ORDINALS[w] for w in ch.text.lower().split() if w in _ORDINALS), None)
