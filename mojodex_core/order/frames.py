"""Grammar pass: group chunks into item frames (one per ordered line).

One left-to-right pass with a few rules, all general (no sentence tables):

* a number starts a new frame once the current one is anchored (has an item noun or
  an item-naming value such as "coke"); an article ("a", "an") only does so when an
  item anchor follows before the next connector ("and a coke" vs "and a thin crust");
* an anchor of another item type starts a new frame, taking along the attributes said
  after the last "and" that fit it ("pizza with ham and large coke");
* a repeated noun after "X and Y <noun>" without "with" starts a new frame
  ("a pepperoni pizza and sausage pizza"), otherwise it is redundant ("pie with ham pizza");
* negation ("no", "without", "hold the", "don't want"...) scopes over the following
  values until "but", "with" (once something was negated), a number, a sentence end,
  or an "and" not followed by a plain value ("no onions and peppers" negates both,
  "no ham and extra cheese" does not);
* a quantity qualifier ("extra", "a little bit of") binds to the next value;
* "both", "each", "all" after a list of items of one type give each of them what follows
  ("a large and a small pizza, both with ham") or, when nothing follows, what the last one got
  with "with" ("... with ham on both");
* an announced quantity followed by parts that add up to it is split into those parts, each
  keeping what was said of the whole ("two large pizzas, one with ham and the other with olives",
  "five pizzas, two with ham and the rest with olives");
* an article + values + "with" is an item whose noun was left out ("a small with ham");
* a definite noun ("make the pizza thin crust") continues the one earlier item of that type.
"""

from __future__ import annotations

from typing import Any

from .frame_parts import Attr, Frame, Segmentation, distribute, split
from .lexicon import Chunk, Sense
from .menu import Menu

__all__ = ["Attr", "Frame", "Segmentation", "segment"]
_ORDINALS = {"first": 0, "second": 1, "third": 2, "fourth": 3, "last": -1}

_CONNECTORS = frozenset({"num", "neg", "with", "and", "or", "but", "boundary", "cancel", "cancel_all", "modify",
                         "checkout", "pickup", "delivery", "pay", "yes", "no_answer"})


def _anchor_senses(chunk: Chunk) -> list[Sense]:
    return [s for s in chunk.senses if s.field is None or s.names_item]


def _types(senses: Any) -> set[str]:
    return {s.item_type for s in senses}


def _fits(attr: Attr, types: set[str]) -> bool:
    return bool(_types(attr.senses) & types)


class _Segmenter:
    def __init__(self, chunks: list[Chunk], menu: Menu) -> None:
        self.chunks = chunks
        self.menu = menu
        self.out = Segmentation()
        self.cur: Frame | None = None
        self.neg = False
        self.neg_count = 0
        self.neg_any = False
        self.qual: str | None = None
        self.definite = False
        self.cancel_next = False
        self.skip_to = -1
        self.dists: list[tuple[list[Frame], Frame, set[int]]] = []

    # -- helpers ------------------------------------------------------------------
    def _next(self, i: int) -> Chunk | None:
        for ch in self.chunks[i + 1:]:
            if ch.kind != "filler":
                return ch
        return None

    def _lookahead_anchor(self, i: int) -> list[Sense]:
        for ch in self.chunks[i + 1:]:
            if ch.kind == "menu":
                anchors = _anchor_senses(ch)
                if anchors:
                    return anchors
            elif ch.kind in ("and", "or"):
                continue  # "a large pepperoni and mushroom pizza"
            elif ch.kind in _CONNECTORS or ch.kind == "unknown":
                return []
        return []

    def _new_frame(self, pull_types: set[str] | None = None, **kw: Any) -> Frame:
        prev = self.cur
        frame = Frame(definite=self.definite, **kw)
        self.definite = False
        if prev is not None:
            frame.inherit = prev.anchor or prev.inherit
            if pull_types and prev.and_mark is not None:
                tail = prev.attrs[prev.and_mark:]
                if tail and all(_fits(a, pull_types) for a in tail):
                    del prev.attrs[prev.and_mark:]
                    frame.attrs.extend(tail)
        if self.cancel_next:
            frame.cancel = True
            self.cancel_next = False
        self.out.frames.append(frame)
        self.cur = frame
        return frame

    def _end_neg(self) -> None:
        self.neg = False
        self.neg_count = 0

    # -- chunk handlers -------------------------------------------------------------
    def on_num(self, i: int, ch: Chunk) -> None:
        nxt = self._next(i)
        if nxt is not None and nxt.kind == "count_word":  # "a two topping pizza"
            self.skip_to = self.chunks.index(nxt)
            return
        article = ch.text in ("a", "an")
        cur = self.cur
        prev = next((c for c in reversed(self.chunks[:i]) if c.kind != "filler"), None)
        if (ch.text in ("one", "1") and cur is not None and cur.anchor is None and cur.number is not None
                and cur.attrs and prev is not None and prev.kind == "menu" and not cur.after_with):
            cur.anchor, cur.has_noun = cur.inherit, cur.inherit is not None  # "a small one": pronoun
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
            return
        ahead = self._lookahead_anchor(i)
        if article:
            if not ahead and not self._restates_field(i, cur) and not self._elided_noun(i, cur):
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
        prev = next((c for c in reversed(self.chunks[:i]) if c.kind != "filler"), None)
        frame.after_and = prev is not None and prev.kind == "and"
        frame.ordinal = next((_ORDINALS[w] for w in ch.text.lower().split() if w in _ORDINALS), None)

    def on_dist(self, ch: Chunk) -> None:
        """ "both", "each", "all": remember the list of items it covers (see :meth:`_distribute`)."""
        cur = self.cur
        kind = cur.anchor or cur.inherit if cur is not None else None
        if cur is None or kind is None:
            return
        group: list[Frame] = []
        for frame in reversed(self.out.frames):
            if frame.anchor != kind and not (frame.anchor is None and all(_fits(a, {kind}) for a in frame.attrs)):
                break
            group.append(frame)
        if ch.payload:
            group = group[: int(ch.payload)]
        if len(group) >= 2:
            self.dists.append((group, cur, {id(a) for a in cur.attrs}))

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
            if ch.kind == "menu" and not _anchor_senses(ch) and any(s.item_type == kind for s in ch.senses):
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

    def on_menu(self, i: int, ch: Chunk) -> None:
        anchors = _anchor_senses(ch)
        values = [s for s in ch.senses if s.field is not None]
        qual, self.qual = self.qual, None
        cur = self.cur
        if anchors and not (cur and cur.anchor and self._prefers_attribute(cur, ch)):
            self._on_anchor(ch, anchors, values, self.neg)
            return
        negated = self.neg
        if self.cancel_next:  # "remove the onions": a value, not an item, is being taken off
            negated, self.cancel_next = True, False
        if cur is not None and cur.anchor and not any(s.item_type == cur.anchor for s in values):
            cur = self._new_frame(pull_types=_types(values))
        elif cur is not None and cur.anchor is None and cur.attrs and not any(
            _fits(a, _types(values)) for a in cur.attrs
        ) or cur is None:
            cur = self._new_frame()
        self._add(cur, Attr(tuple(values), negated, qual, ch.text))

    def _prefers_attribute(self, cur: Frame, ch: Chunk) -> bool:
        """A value that names an item but also fills an empty field of the current one ("combo with coke")."""
        if not cur.with_seen:
            return False
        for s in ch.senses:
            if s.item_type == cur.anchor and s.field and not s.names_item:
                return not any(s.field in {x.field for x in a.senses} for a in cur.attrs)
        return False

    def _on_anchor(self, ch: Chunk, anchors: list[Sense], values: list[Sense], negated: bool) -> None:
        types = _types(anchors)
        is_noun = all(s.field is None for s in anchors)
        if self.neg and self.neg_count == 0 and is_noun:
            return  # "no drinks with this order"
        neg_item = self.neg and self.neg_count == 0  # "I don't want a latte": the item is negated
        cur = self.cur
        earlier = self._definite_earlier(types) if is_noun and cur is not None and cur.anchor not in types else None
        if earlier is not None:
            cur = self.cur = earlier  # "a pizza and a coke, and make the pizza thin crust"
        elif self.cancel_next or cur is None:
            cur = self._new_frame()
        elif cur.anchor is None:
            if cur.attrs and not all(_fits(a, types) for a in cur.attrs):
                cur = self._new_frame()
        elif cur.anchor in types:
            name_fields = {s.field for s in anchors if s.names_item}
            if is_noun:
                if cur.has_noun and cur.and_mark is not None and not cur.with_seen and not self.definite:
                    cur = self._new_frame(pull_types=types)
            elif any(s.field in name_fields for a in cur.attrs for s in a.senses):
                cur = self._new_frame(pull_types=types)
        else:
            cur = self._new_frame(pull_types=types)
        if cur.anchor is None:
            cur.anchor = anchors[0].item_type if len(types) == 1 else self._pick_type(cur, types)
        if neg_item and not cur.attrs and not cur.has_noun:
            cur.negated = True
        if self.definite:
            cur.definite, self.definite = True, False
        if is_noun:
            cur.has_noun = True
        else:
            # keep every reading: the parser may re-read the frame as an answer ("coke" for a combo's drink)
            vals = [s for s in anchors + values if s.field]
            self._add(cur, Attr(tuple(dict.fromkeys(vals)), negated, None, ch.text))

    def _definite_earlier(self, types: set[str]) -> Frame | None:
        """The one earlier item of this type a definite noun ("the pizza") refers back to."""
        if not self.definite or self.cancel_next:
            return None
        same = [f for f in self.out.frames if f.anchor in types]
        return same[0] if len(same) == 1 else None

    def _pick_type(self, cur: Frame, types: set[str]) -> str:
        for t in self.menu.item_types:
            if t in types and all(_fits(a, {t}) for a in cur.attrs):
                return t
        return next(t for t in self.menu.item_types if t in types)

    def _add(self, cur: Frame, attr: Attr) -> None:
        if not attr.senses:
            return
        cur.attrs.append(attr)
        attr.neg_direct = self.neg and self.neg_count == 0
        if self.neg:
            self.neg_count += 1
            self.neg_any = True

    def run(self) -> Segmentation:
        flags = self.out.flags
        for i, ch in enumerate(self.chunks):
            if i <= self.skip_to:
                continue
            k = ch.kind
            if k not in ("filler", "boundary"):
                self.out.content += 1
            if k == "num":
                self.on_num(i, ch)
            elif k == "menu":
                self.on_menu(i, ch)
                self.definite = False
                continue
            elif k == "qual":
                if self.neg and self.neg_count:
                    self._end_neg()  # "no pickles extra onions": a qualifier starts a positive request
                self.qual = ch.payload
                continue
            elif k == "neg":
                if not self.neg:
                    self.neg, self.neg_count = True, 0
            elif k == "with":
                if self.neg and self.neg_count:
                    self._end_neg()
                if self.cur is not None:
                    self.cur.after_with = True
                    if self.cur.with_mark is None:
                        self.cur.with_mark = len(self.cur.attrs)
                    if self.cur.anchor:
                        self.cur.with_seen = True
            elif k == "other":
                self.on_other(i, ch)
            elif k == "dist":
                self.on_dist(ch)
            elif k == "and":
                nxt = self._next(i)
                if self.neg and not (self.neg_count and nxt is not None and nxt.kind == "menu"
                                     and not _anchor_senses(nxt)):
                    self._end_neg()
                if self.cur is not None and self.cur.anchor:
                    self.cur.and_mark = len(self.cur.attrs)
            elif k in ("but", "boundary"):
                self._end_neg()
            elif k == "def":
                self.definite = True
                continue
            elif k == "cancel":
                self.cancel_next = True
                continue
            elif k == "modify":
                self.out.modify = True
                if ch.text.split()[-1] == "the":  # "make the pizza thin crust": a reference
                    self.definite = True
                    continue
            elif k == "unknown":
                self.out.unknown.append(ch.text)
                self.cancel_next = False  # "cancel the coke" (not on this menu): reported, not "cancel that"
            elif k in ("yes", "no_answer", "pickup", "delivery", "checkout", "cancel_all"):
                flags[k] = True
            elif k == "pay":
                flags["pay"] = ch.payload
            if k not in ("filler", "or"):
                self.qual = None
        if self.neg and not self.neg_any:
            self.out.bare_negation = True
        self.out.cancel_dangling = self.cancel_next
        distribute(self.dists)
        split(self.out.frames)
        return self.out


def segment(chunks: list[Chunk], menu: Menu) -> Segmentation:
    return _Segmenter(chunks, menu).run()
