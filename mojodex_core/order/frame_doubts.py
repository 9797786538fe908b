"""Grammar-pass handlers that read pauses, corrections, halves, unknown names, "both"/"each" and
"the one", and record the structural doubts the parse can't represent (``Segmentation.doubts`` ->
``ParsedInput.unparsed``).

A mixin of the segmenter (:mod:`frames`): it uses the segmenter's state (``out``, ``cur``,
``neg``...) and its ``_new_frame`` / ``_end_neg``.
"""

from __future__ import annotations

from typing import Any

from .frame_parts import Frame, Segmentation
from .frame_rules import ChunkRules, anchor_senses, fits, taken_off, types_of
from .lexicon import Chunk


class DoubtHandlers(ChunkRules):
    out: Segmentation
    cur: Frame | None
    neg: bool
    neg_count: int
    definite: bool
    cancel_next: bool
    correcting: bool
    half_whole: Frame | None
    menu: Any
    dists: list[tuple[list[Frame], Frame, set[int]]]
    dist_texts: list[tuple[str, bool]]
    cross_dist: Frame | None

    def _new_frame(self, pull_types: set[str] | None = None, **kw: Any) -> Frame:
        raise NotImplementedError

    def _end_neg(self) -> None:
        raise NotImplementedError

    def on_wait(self, i: int, ch: Chunk) -> None:
        """ "hold on", "wait": a pause or a self-correction - except "hold on chicken" (= hold the chicken)."""
        nxt = self._next(i)
        if ch.text.lower().startswith("hold") and nxt is not None and nxt.kind == "menu":
            if not self.neg:
                self.neg, self.neg_count, self.neg_word = True, 0, ch.text.lower()
            return
        self._end_neg()
        if not self.out.frames and ch.text.lower().split()[-1] == "no" and nxt is not None and nxt.kind == "menu" \
                and any(s.field is not None and self.menu.item_types[s.item_type].fields[s.field].negatable
                        for s in nxt.senses) and any(c.kind == "def" for c in self.chunks[i + 2:]):
            # "actually no olives on the small pizza" opening a message: "actually" is a discourse word, the "no"
            # negates the line "the ..." names (after an item, "a pizza with ham actually no olives" stays a
            # correction)
            self.neg, self.neg_count, self.neg_word = True, 0, ch.text.lower()
            return
        if self.out.frames:
            self.correcting = True
            if all(c.kind in ("filler", "boundary", "wait") for c in self.chunks[i + 1:]):
                self.out.doubts.append(ch.text)  # "a large pizza, hold on": a pause - the order isn't finished
        else:
            self.out.opens_with_correction = True  # "actually a pepsi": instead of, or as well?

    def on_but(self, i: int, ch: Chunk) -> None:
        """ "with everything but anchovies", "ham but mushrooms": "but" straight before a value, with no
        negation, is an exception or a contrast the parse can't tell apart - a doubt, not an addition."""
        nxt = self._next(i)
        if nxt is not None and nxt.kind == "menu":
            self.out.doubts.append(f"{ch.text} {nxt.text}")

    def on_half(self, i: int, ch: Chunk) -> None:
        """ "a dozen bagels, half with butter": a part of an even announced quantity (split later);
        a half of anything else ("a pizza, half pepperoni") can't be represented: a doubt."""
        self._end_neg()
        whole = self.half_whole
        cur = self.cur
        if whole is None and cur is not None and cur.anchor and not cur.article and cur.number is not None:
            if float(cur.number).is_integer() and cur.number >= 2 and cur.number % 2 == 0:
                whole = cur
        if whole is None or whole.number is None:
            self.out.doubts.append(ch.text)
            return
        self.half_whole = whole
        prev = self._prev(i)
        self._new_frame(number=whole.number / 2, split_child=True, after_and=prev is not None and prev.kind == "and")

    def on_unknown(self, i: int) -> None:
        """ "a big mac", "garlic bread": values right before an unknown word name an item the menu doesn't
        have - the whole name is unresolved (reported as one span), not an order for a large something."""
        cur = self.cur
        if cur is None or cur.anchor is not None or not cur.attrs or i == 0 or self.chunks[i - 1].kind != "menu":
            return
        cur.unknown_head = True
        j = i - 1
        while j >= 0 and self.chunks[j].kind == "menu" and cur.name_attrs < len(cur.attrs):
            self.chunks[j] = self.chunks[j]._replace(kind="unknown")
            cur.name_attrs += 1
            j -= 1

    def _glued_prev(self, i: int) -> bool:
        """The chunk before ``i`` (commas aside) is a menu value: "no ham bacon", "not ham, bacon"."""
        j = i - 1
        while j >= 0 and self.chunks[j].text == ",":
            j -= 1
        return j >= 0 and self.chunks[j].kind == "menu"

    def _orphan(self, i: int, cur: Frame | None) -> None:
        """ "a warm sesame bagel": values right before values of another item, with nothing between, are
        not an item of their own - the frame they started is dropped and reported."""
        if cur is not None and cur.anchor is None and cur.attrs and i > 0 and self.chunks[i - 1].kind == "menu":
            cur.report_only = True

    def on_the_one(self, ch: Chunk, prev: Chunk | None) -> bool:
        """ "the one with olives", "cancel the one with ham": a reference described by what follows (see
        ``references.find_ref``), not a count of one - the frame is definite and has no number."""
        if ch.text.lower() not in ("one", "1") or not self.definite:
            return False
        if prev is None or prev.kind not in ("def", "modify"):
            return False
        self._end_neg()
        self._new_frame()
        return True

    def on_amount_filler(self, i: int, ch: Chunk) -> None:
        """ "extra roses" at a shop whose menu has no amounts: "extra" is a filler there, but before a value
        (not an item: "an extra bouquet" is one more) it asks for an amount the menu can't hold."""
        if self.menu.qualifiers or ch.text.lower() not in ("extra", "double"):
            return
        nxt, prev = self._next(i), self._prev(i)
        if nxt is not None and nxt.kind == "menu" and not anchor_senses(nxt) and not (
                prev is not None and prev.kind == "num" and prev.text not in ("a", "an")):
            self.out.doubts.append(f"{ch.text} {nxt.text}")

    def on_and_a_part(self, i: int, prev: Chunk | None, cur: Frame | None) -> None:
        """ "a large pizza and a pepperoni", "... and a hamburger": after "and", an article before a value of
        the item's "with" list is a second item named by its topping (or one the menu doesn't sell), or one
        more topping - not guessed. ("and a thin crust" - not a list value - stays the item's crust.)"""
        nxt = self._next(i)
        if prev is None or prev.kind != "and" or cur is None or cur.anchor is None or nxt is None:
            return
        fields = self.menu.item_types[cur.anchor].fields
        said = [s for s in nxt.senses if s.item_type == cur.anchor and s.field]
        if nxt.kind == "menu" and said and all(fields[s.field].multi and fields[s.field].with_list for s in said):
            self.out.doubts.append(f"{self.chunks[i].text} {nxt.text}")

    def on_answer_no(self, i: int, ch: Chunk) -> bool:
        """ "no, not toasted": a "no" followed by a comma answers; it negates nothing after the comma
        (which would otherwise flip "not toasted" back to toasted)."""
        if ch.text.lower() != "no" or i + 1 >= len(self.chunks) or self.chunks[i + 1].text != ",":
            return False
        self.chunks[i] = ch._replace(kind="no_answer")
        self.out.flags["no_answer"] = True
        return True

    def on_dangling_neg(self, i: int, ch: Chunk) -> None:
        """ "a large pizza with no": a negation with nothing after it, once something was ordered."""
        nxt = self._next(i)
        if (nxt is None or nxt.kind == "boundary") and any(c.kind in ("menu", "num") for c in self.chunks[:i]):
            self.out.doubts.append(ch.text)

    def _definite_named(self, ch: Chunk) -> Frame | None:
        """An earlier item of this message named again with "the" ("a sprite and a root beer, no ice in the
        sprite"): the values around it can't be placed for sure."""
        if not self.definite or self.cancel_next:
            return None
        said = {(s.item_type, s.field, s.value) for s in ch.senses if s.names_item}
        same = [f for f in self.out.frames if any((s.item_type, s.field, s.value) in said
                                                   for a in f.attrs for s in a.senses if s.names_item)]
        return same[0] if len(same) == 1 else None

    def on_dist(self, ch: Chunk) -> None:
        """ "both", "each", "all": remember the list of items it covers (see :meth:`_distribute`)."""
        cur = self.cur
        kind = cur.anchor or cur.inherit if cur is not None else None
        if cur is not None and kind is None and cur.attrs:  # "one plain and one everything, both toasted"
            common = set.intersection(*(types_of(a.senses) for a in cur.attrs))
            if len(common) > 1 and cur.definite:
                # "the large one and the small one both thin crust": "large", "small" fit a pizza and a drink alike;
                # the value said next tells which - a plain value only: "both diet coke" would rename the lines, which a
                # reference does not do ("the large one diet coke" changes nothing), so that stays "which one?"
                said = next((c for c in self.chunks[self.at + 1:] if c.kind not in ("filler", "with")), None)
                plain = said.senses if said is not None and said.kind == "menu" and not anchor_senses(said) else ()
                common &= types_of(plain)
            kind = next(iter(common)) if len(common) == 1 else None
        if cur is None and not self.out.frames:  # "both large" opening a message: every item already ordered
            self.out.flags["dist_order"] = (ch.text, ch.payload)
        if (cur is not None and self.out.frames == [cur] and cur.anchor is None and cur.inherit is None
                and cur.number is None and cur.attrs and all(taken_off(self.menu, a) for a in cur.attrs)):
            # "remove the bacon from both", "no onions on either", "no ice in both": values taken off items already
            # ordered (the parser checks that as many lines hold them)
            self.out.flags["dist_order"] = (ch.text, ch.payload)
            return
        if cur is None or kind is None:
            return
        group: list[Frame] = []
        for frame in reversed(self.out.frames):
            if frame.anchor != kind and not (frame.anchor is None and all(fits(a, {kind}) for a in frame.attrs)):
                break
            group.append(frame)
        if ch.payload:
            group = group[: int(ch.payload)]
        if ch.payload == 2 and len(group) == 1 and (cur.number is None or cur.article or cur.number < 2) and not [
                f for f in self.out.frames if f.anchor and f is not cur]:
            self.out.doubts.append(ch.text)  # "and a hamburger, both with no onions": both with the earlier burger?
        if len(group) >= 2:
            self.dists.append((group, cur, {id(a) for a in cur.attrs}))
            self.dist_texts.append((ch.text, ch.payload == 2))
            return
        # items of different types ("a pizza and a coke, both large"): what follows goes to each of them;
        # a value that doesn't fit one of them is left unresolved there (the parser can't represent it)
        named = [f for f in self.out.frames if f.anchor]
        named = named[-int(ch.payload):] if ch.payload else named
        if len(named) >= 2 and cur is named[-1]:
            self.dists.append((named, cur, {id(a) for a in cur.attrs}))
            self.dist_texts.append((ch.text, ch.payload == 2))
            self.cross_dist = cur
