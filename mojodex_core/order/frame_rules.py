"""Look-around rules of the grammar pass: small predicates over the chunks near a position.

They decide whether an article starts another item ("a large pizza and a small", "3 pizzas: a small
with ham, a medium with bacon") or belongs to an attribute ("with a thin crust"), and whether a value
that names an item is rather an attribute of the current one ("a combo with a coke").
"""

from __future__ import annotations

from typing import Any

from .frame_parts import Attr, Frame
from .grammar_words import AND_REPLACEMENT_NEGATIONS, NEG_ENDS, REPLACEMENT_TAILS
from .lexicon import Chunk, Sense
from .menu import Menu

CONNECTORS = frozenset({"num", "neg", "with", "and", "or", "but", "boundary", "cancel", "cancel_all", "modify",
                        "checkout", "pickup", "delivery", "pay", "yes", "no_answer"})


def anchor_senses(chunk: Chunk) -> list[Sense]:
    return [s for s in chunk.senses if s.field is None or s.names_item]


def types_of(senses: Any) -> set[str]:
    return {s.item_type for s in senses}


def fits(attr: Attr, types: set[str]) -> bool:
    return bool(types_of(attr.senses) & types)


def ends_negation(menu: Menu, chunk: Chunk, negated: set[tuple[str, str]]) -> bool:
    """Whether ``chunk`` ends a negation that already took values (of the fields ``negated``): "just", "only"
    ("no toppings, just cheese"), or a yes/no value of another field ("no spread, toasted", "no lox toasted with
    ..."): said for itself - the "no" was about the other field, not "not toasted"."""
    if chunk.kind == "filler":
        return bool(negated) and chunk.text.lower() in NEG_ENDS
    if chunk.kind != "menu":
        return False
    fields = {(s.item_type, s.field) for s in chunk.senses if s.field is not None}
    return bool(negated and fields) and not fields & negated and all(
        menu.item_types[t].fields[f].kind == "bool" for t, f in fields)


def noun_follows(chunks: list[Chunk], i: int) -> bool:
    """Only values and filler, then the noun or "one", after chunk ``i``: "the large, thin crust pizza", "the
    large uh thin crust pizza" - the description goes on."""
    for ch in chunks[i + 1:]:
        if ch.kind == "filler":
            continue
        if ch.kind == "num":
            return ch.text.lower() in ("one", "1")
        if ch.kind != "menu":
            return False
        if anchor_senses(ch):
            return True
    return False


def replacement_clause(chunks: list[Chunk], start: int) -> int | None:
    """Where the bare "instead" is when the chunks from ``start`` are values then that word closing the sentence
    ("mushrooms instead", "i'll have mushrooms instead please"): said after a negation's values, they replace
    them."""
    values = 0
    for j, ch in enumerate(chunks[start:], start):
        if ch.kind == "menu" and not anchor_senses(ch):
            values += 1
        elif ch.kind == "modify" and ch.text.lower() in REPLACEMENT_TAILS:
            return j if values and _clause_ends(chunks, j + 1) else None
        elif ch.kind != "filler" or ch.text == ",":
            return None
    return None


def and_replacement(chunks: list[Chunk], start: int, neg_word: str, negated: int) -> int | None:
    """Where the bare "instead" is when the "and" before ``start`` opens a replacement clause: ``negated`` is one
    value, negated by a word of ``AND_REPLACEMENT_NEGATIONS`` (``neg_word``), and one value follows ("no olives and
    mushrooms instead", "no olives and i'll have mushrooms instead")."""
    if negated != 1 or neg_word not in AND_REPLACEMENT_NEGATIONS:
        return None
    at = replacement_clause(chunks, start)
    return at if at is not None and sum(ch.kind == "menu" for ch in chunks[start:at]) == 1 else None


def _clause_ends(chunks: list[Chunk], start: int) -> bool:
    """Only fillers until the sentence ends."""
    for ch in chunks[start:]:
        if ch.kind == "boundary":
            return True
        if ch.kind != "filler":
            return False
    return True


def taken_off(menu: Menu, attr: Attr) -> bool:
    """A value taken off an item: negated ("no onions"), or a yes/no field's false word ("no ice")."""
    return attr.negated or bool(attr.senses) and all(
        s.field is not None and s.value is False and menu.item_types[s.item_type].fields[s.field].kind == "bool"
        for s in attr.senses)


class ChunkRules:
    """Predicates over ``self.chunks`` (the segmenter's input) for the current frame."""

    chunks: list[Chunk]
    menu: Menu

    def _prev(self, i: int) -> Chunk | None:
        return next((c for c in reversed(self.chunks[:i]) if c.kind != "filler"), None)

    def _next(self, i: int) -> Chunk | None:
        for ch in self.chunks[i + 1:]:
            if ch.kind != "filler":
                return ch
        return None

    def _lookahead_anchor(self, i: int) -> list[Sense]:
        for ch in self.chunks[i + 1:]:
            if ch.kind == "menu":
                anchors = anchor_senses(ch)
                if anchors:
                    return anchors
            elif ch.kind in ("and", "or"):
                continue  # "a large pepperoni and mushroom pizza"
            elif ch.kind in CONNECTORS or ch.kind == "unknown":
                return []
        return []

    def _names_the_noun(self, i: int, values: list[Sense]) -> bool:
        """Values followed, with only values between, by a noun they describe: "the small pepperoni pizza"."""
        types = types_of(values)
        for ch in self.chunks[i + 1:]:
            if ch.kind == "filler":
                continue
            if ch.kind != "menu":
                return False
            if any(s.field is None and s.item_type in types for s in ch.senses):
                return True
            if anchor_senses(ch):
                return False
        return False

    def _reference_follows(self, i: int) -> bool:
        """Values after "the" followed, with only values between, by the noun they describe or by "one": "no olives
        on the large pizza", "no ham on the small one" - a description of an item, not values of their own."""
        values = [s for s in self.chunks[i].senses if s.field is not None]
        if self._names_the_noun(i, values):
            return True
        for ch in self.chunks[i + 1:]:
            if ch.kind == "filler":
                continue
            if ch.kind == "num":
                return ch.text.lower() in ("one", "1")
            if ch.kind != "menu" or anchor_senses(ch):
                return False
        return False

    def _restates_field(self, i: int, cur: Frame) -> bool:
        """ "a large pizza and a small", "a hawaiian and a margherita": after "and", an article
        followed by a value for a field the current item already has starts another item."""
        prev = next((c for c in reversed(self.chunks[:i]) if c.kind != "filler"), None)
        nxt = self._next(i)
        if prev is None or prev.kind != "and" or nxt is None or nxt.kind != "menu":
            return False
        filled = {(s.item_type, s.field) for a in cur.attrs for s in a.senses
                  if s.field and not self.menu.item_types[s.item_type].fields[s.field].with_list}
        return any((s.item_type, s.field) in filled for s in nxt.senses)

    def _elided_noun(self, i: int, cur: Frame) -> bool:
        """ "3 pizzas: a small with ham, a medium with bacon": an article, values of the current item's
        type, then "with" - another item whose noun was left out."""
        kind = cur.anchor or cur.inherit
        prev = next((c for c in reversed(self.chunks[:i]) if c.kind != "filler"), None)
        if kind is None or prev is None or prev.kind in ("with", "neg", "qual"):
            return False
        seen = False
        for ch in self.chunks[i + 1:]:
            if ch.kind == "filler":
                continue
            if ch.kind == "menu" and not anchor_senses(ch) and any(s.item_type == kind for s in ch.senses):
                seen = True
                continue
            return seen and ch.kind == "with"
        return False

    def _absorbs(self, cur: Frame, senses: list[Sense]) -> bool:
        if not senses:
            return False
        tdef = self.menu.item_types.get(cur.anchor or "")
        return bool(tdef) and any(
            not s.names_item and s.item_type == cur.anchor and s.field for s in self._all_senses(senses)
        )

    def _all_senses(self, anchors: list[Sense]) -> list[Sense]:
        # the chunk holding these anchor senses may also carry plain-value senses
        for ch in self.chunks:
            if ch.kind == "menu" and anchors[0] in ch.senses:
                return list(ch.senses)
        return anchors

    def _prefers_attribute(self, cur: Frame, ch: Chunk) -> bool:
        """A value that names an item but also fills an empty field of the current one ("combo with coke")."""
        if not cur.with_seen:
            return False
        for s in ch.senses:
            if s.item_type == cur.anchor and s.field and not s.names_item:
                return not any(s.field in {x.field for x in a.senses} for a in cur.attrs)
        return False
