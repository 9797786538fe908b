"""Grammar pass: group chunks into item frames (one per ordered line).

One left-to-right pass with a few rules, all general (no sentence tables):

* a number starts a new frame once the current one is anchored (has an item noun or
  an item-naming value such as "coke"); an article ("a", "an") only does so when an
  item anchor follows before the next connector ("and a coke" vs "and a thin crust");
* an anchor of another item type starts a new frame, taking along the attributes said
  after the last "and" that fit it ("pizza with ham and large coke");
* a repeated noun after "X and Y <noun>" without "with" starts a new frame
  ("a pepperoni pizza and sausage pizza"), otherwise it is redundant ("pie with ham pizza");
* negation ("no", "without", "hold the", "don't want"...) scopes over the following values until "but",
  "with" or "just" (once something was negated), a yes/no value after other fields' ("no spread, toasted"),
  a number, a sentence end, a comma or dash before values closed by a bare "instead" ("no olives, mushrooms
  instead"; a bare "and" only in "no olives and mushrooms instead"), or an "and" not followed by a plain value
  ("no onions and peppers" negates both, "no ham and extra cheese" does not);
* a quantity qualifier ("extra", "a little bit of") binds to the next value;
* "both", "each", "all" after a list of items of one type give each of them what follows
  ("a large and a small pizza, both with ham") or, when nothing follows, what the last one got
  with "with" ("... with ham on both");
* an announced quantity followed by parts that add up to it is split into those parts, each
  keeping what was said of the whole ("two large pizzas, one with ham and the other with olives",
  "five pizzas, two with ham and the rest with olives");
* an article + values + "with" is an item whose noun was left out ("a small with ham");
* a definite noun ("make the pizza thin crust") continues the one earlier item of that type;
* "wait", "hold on" after something was ordered mark what follows as a self-correction (a later
  value replaces an earlier one); "hold on" straight before a menu value is "hold the" ("hold on chicken");
* "half" takes half of an even announced quantity ("a dozen bagels, half with butter" = 6 + 6);
  any other half ("a pizza, half pepperoni") is a doubt: the parse can't represent it;
* "both"/"each" after items of different types give what follows to each of them ("a pizza and a
  coke, both large"); a value that doesn't fit one of them stays unresolved there;
* values right before an unknown word ("a big mac", "garlic bread") name an unknown item, not an
  attribute; a negation with nothing after it ("a pizza with no") is a doubt.

Doubts (``Segmentation.doubts``) end up in ``ParsedInput.unparsed``: never silently dropped.
"""

from __future__ import annotations

from typing import Any

from . import grammar_words as gw
from .frame_counts import CountHandlers
from .frame_parts import Attr, Frame, Segmentation, distribute, split
from .frame_rules import anchor_senses, and_replacement, ends_negation, fits, noun_follows, replacement_clause, types_of
from .lexicon import Chunk, Sense
from .menu import Menu

__all__ = ["Attr", "Frame", "Segmentation", "segment"]


class _Segmenter(CountHandlers):
    def __init__(self, chunks: list[Chunk], menu: Menu) -> None:
        self.chunks = chunks
        self.menu = menu
        self.out = Segmentation()
        self.cur: Frame | None = None
        self.neg, self.neg_word = False, ""  # the negation, and the word that opened it ("no", "without", "remove")
        self.neg_count = 0
        self.neg_any = False
        self.neg_fields: set[tuple[str, str]] = set()  # fields negated since the last negation word
        self.replaced_at = -1  # the "instead" of a replacement clause ("no olives, mushrooms instead")
        self.qual: str | None = None
        self.qual_text = ""
        self.qual_counts = False
        self.definite = False
        self.cancel_next = False
        self.cancel_text = ""
        self.skip_to = -1
        self.dists: list[tuple[list[Frame], Frame, set[int]]] = []
        self.dist_texts: list[tuple[str, bool]] = []  # what was said, and whether it names two items
        self.correcting = False  # a "wait"/"hold on" after something was ordered: later values correct earlier ones
        self.cross_dist: Frame | None = None  # "a pizza and a coke, both large": values go to every item named
        self.half_whole: Frame | None = None  # the line "half ..." takes a share of
        self.at = 0  # index of the chunk being read

    # -- helpers ------------------------------------------------------------------
    def _new_frame(self, pull_types: set[str] | None = None, **kw: Any) -> Frame:
        prev = self.cur
        frame = Frame(definite=self.definite, **kw)
        before = self._prev(self.at)
        frame.follows_with = before is not None and before.kind == "with"
        joint = next((c for c in reversed(self.chunks[:self.at]) if c.kind not in ("filler", "def")), None)
        frame.joined_by_and = joint is not None and joint.kind == "and"
        self.definite = False
        if prev is not None:
            frame.inherit = prev.anchor or prev.inherit
            if pull_types and prev.and_mark is not None:
                tail = prev.attrs[prev.and_mark:]
                if tail and all(fits(a, pull_types) for a in tail):
                    del prev.attrs[prev.and_mark:]
                    frame.attrs.extend(tail)
        if self.cancel_next:
            frame.cancel = True
            self.cancel_next = False
        self.out.frames.append(frame)
        self.cur = frame
        return frame

    def _next_described(self, frame: Frame) -> Frame:
        """A second "the ..." description in one frame ("no olives on the large one and no ham on the small one"):
        the values said since the first description ended are the second one's change, in a frame of their own."""
        end = frame.described_end if frame.described_end is not None else len(frame.attrs)
        if frame.described_at == 0:  # "the large one thin crust, the small one ...": the description came first,
            # what follows it is its own change - up to a later clause ("..., extra cheese on the small one")
            end = max(end, frame.clause_at if frame.clause_at is not None else len(frame.attrs))
        tail = frame.attrs[end:]
        del frame.attrs[end:]
        self.definite = True
        nxt = self._new_frame()
        nxt.attrs.extend(tail)
        return nxt

    def _replacement_starts(self, i: int) -> bool:
        """A comma, a bare "and" after "no" + one value (or, the dash dropped, a value right after a negated one) opens
        a replacement clause; its "instead" then says what it replaces, not a doubt (:attr:`Segmentation.instead`)."""
        ch = self.chunks[i]
        if ch.text in gw.REPLACEMENT_OPENERS:
            at = replacement_clause(self.chunks, i + 1)
        elif ch.kind == "and" and ch.text.lower() == "and":
            at = and_replacement(self.chunks, i + 1, self.neg_word, self.neg_count)
        elif ch.kind == "menu" and i > 0 and self.chunks[i - 1].kind == "menu":
            at = replacement_clause(self.chunks, i)
        else:
            return False
        if at is not None:
            self.replaced_at = at
        return at is not None

    def _end_neg(self) -> None:
        self.neg, self.neg_count, self.neg_fields = False, 0, set()

    # -- chunk handlers -------------------------------------------------------------
    def on_menu(self, i: int, ch: Chunk) -> None:
        anchors = anchor_senses(ch)
        values = [s for s in ch.senses if s.field is not None]
        qual, self.qual = self.qual, None
        cur = self.cur
        if anchors and not (cur and cur.anchor and self._prefers_attribute(cur, ch)):
            if qual is not None and not self.qual_counts:  # "a double espresso": an amount of an item
                self.out.doubts.append(f"{self.qual_text} {ch.text}")
            self._on_anchor(ch, anchors, values, self.neg)
            return
        negated = self.neg
        if negated and self.neg_count and self._glued_prev(i) and any(
                self.menu.item_types[s.item_type].fields[s.field].negatable for s in values):
            self.out.doubts.append(ch.text)  # "no, not ham, bacon": still negated, or the correction? not guessed
        if self.cancel_next and self._names_the_noun(i, values):
            # "remove the pepperoni pizza": the values describe the item taken off, they are not taken off it
            self._add(self._new_frame(), Attr(tuple(values), False, qual, ch.text))
            return
        if self.cancel_next:  # "remove the onions": a value, not an item, is being taken off
            negated, self.cancel_next = True, False
            # and the values listed with it ("remove the ham and olives": both off, see frame_rules.and_replacement)
            self.neg, self.neg_count, self.neg_word = True, 0, self.cancel_text
        if cur is not None and cur is self.cross_dist:
            pass  # "..., both large": the value goes to every item of the list (see :meth:`on_dist`)
        elif cur is not None and cur.anchor and not any(s.item_type == cur.anchor for s in values):
            cur = self._new_frame(pull_types=types_of(values))
        elif cur is not None and cur.anchor is None and cur.attrs and not any(
            fits(a, types_of(values)) for a in cur.attrs
        ) or cur is None:
            self._orphan(i, cur)
            cur = self._new_frame()
        self._add(cur, Attr(tuple(values), negated, qual, ch.text))

    def _on_anchor(self, ch: Chunk, anchors: list[Sense], values: list[Sense], negated: bool) -> None:
        types = types_of(anchors)
        is_noun = all(s.field is None for s in anchors)
        if self.neg and self.neg_count == 0 and is_noun:
            return  # "no drinks with this order"
        neg_item = self.neg and self.neg_count == 0  # "I don't want a latte": the item is negated
        cur = self.cur
        earlier = self._definite_earlier(types) if is_noun and cur is not None and cur.anchor not in types else None
        named = self._definite_named(ch) if not is_noun else None
        if named is not None:
            self.out.doubts.append(f"the {ch.text}")  # "..., no ice in the sprite": said before the reference
            cur = self.cur = named
            return
        if earlier is not None:
            cur = self.cur = earlier  # "a pizza and a coke, and make the pizza thin crust"
        elif self.cancel_next or cur is None:
            cur = self._new_frame()
        elif cur.anchor is None:
            if cur.attrs and not all(fits(a, types) for a in cur.attrs):
                self._orphan(self.at, cur)
                cur = self._new_frame()
        elif cur.anchor in types:
            name_fields = {s.field for s in anchors if s.names_item}
            if is_noun:
                if cur.has_noun and cur.and_mark is not None and not cur.with_seen and not self.definite:
                    cur = self._new_frame(pull_types=types)
            elif any(s.field in name_fields for a in cur.attrs for s in a.senses):
                cur = self._new_frame(pull_types=types)
        else:
            moved = len(cur.attrs)
            old = cur
            cur = self._new_frame(pull_types=types)
            if len(old.attrs) == moved and self.at > 0 and self.chunks[self.at - 1].kind == "menu":
                self.out.doubts.append(f"{self.chunks[self.at - 1].text} {ch.text}")  # "a cheeseburger meal"
        if cur.anchor is None:
            cur.anchor = anchors[0].item_type if len(types) == 1 else self._pick_type(cur, types)
        if neg_item and not cur.attrs and not cur.has_noun:
            cur.negated = True
        if self.definite:
            cur.definite, self.definite = True, False
        if is_noun:
            if not cur.has_noun:
                cur.noun_at = len(cur.attrs)
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
            if t in types and all(fits(a, {t}) for a in cur.attrs):
                return t
        return next(t for t in self.menu.item_types if t in types)

    def _add(self, cur: Frame, attr: Attr) -> None:
        if not attr.senses:
            return
        attr.corrects = self.correcting
        cur.attrs.append(attr)
        attr.neg_direct = self.neg and self.neg_count == 0
        if self.neg:
            self.neg_count += 1
            self.neg_any = True
            self.neg_fields |= {(s.item_type, s.field) for s in attr.senses if s.field is not None}

    def run(self) -> Segmentation:
        flags = self.out.flags
        for i, ch in enumerate(self.chunks):
            if i <= self.skip_to:
                continue
            self.at = i
            k = ch.kind
            if k == "filler" and ch.text.lower() in gw.VAGUE_OBJECTS:
                prev = self._prev(i)
                if prev is not None and prev.kind == "with":  # "a hamburger with everything": not on this menu
                    k = "unknown"
                    self.chunks[i] = ch = ch._replace(kind=k)
            if k == "count_word" and ch.senses and (self.neg or self.cancel_next):
                k = "menu"  # "no toppings": the field as a whole, not a count ("a two topping pizza")
                self.chunks[i] = ch = ch._replace(kind=k)
            if self.neg and ends_negation(self.menu, ch, self.neg_fields):
                self._end_neg()  # "no toppings, just cheese", "no spread, toasted": said for itself
            if self.neg and self.neg_count and self._replacement_starts(i):
                self._end_neg()  # "no olives, mushrooms instead": the mushrooms replace the olives
            if k == "filler":
                self.on_amount_filler(i, ch)
            if k not in ("filler", "boundary"):
                self.out.content += 1
            if k != "menu" and self.cur is not None and self.cur.described_end is None \
                    and self.cur.described_at is not None and not (k == "filler" and noun_follows(self.chunks, i)):
                self.cur.described_end = len(self.cur.attrs)  # "the small one", "the large, and ...": said
            if (k in ("and", "boundary") or ch.text == ",") and self.cur is not None:
                self.cur.clause_at = len(self.cur.attrs)
            if k == "num":
                self.on_num(i, ch)
            elif k == "menu":
                described = self.cur if self.definite else None
                if described is not None and (described.anchor is not None or not described.attrs
                                              or not self._reference_follows(i)):
                    described = None
                if described is not None and described.described_at is not None:
                    described = self._next_described(described)  # "no ice in the small one, extra in the large one"
                if described is not None:  # "no olives on the large thin crust pizza": "the" names an ordered
                    self._end_neg()  # item, its values describe it (not negated, not added to it)
                    described.described_at = len(described.attrs)
                before, leads = self.cur, self.definite and described is None and self._reference_follows(i)
                self.on_menu(i, ch)
                if leads and self.cur is not None and self.cur is not before and self.cur.anchor is None \
                        and len(self.cur.attrs) == 1:
                    self.cur.described_at = 0  # "the large one thin crust, ...": a description that comes first
                if described is not None and self.cur is described:
                    described.definite = True
                self.definite = False
                continue
            elif k == "qual":
                if self.qual is not None and self.qual != ch.payload:  # "light extra cheese": which amount?
                    self.out.doubts.append(f"{self.qual_text} {ch.text}")
                if self.neg and self.neg_count:
                    self._end_neg()  # "no pickles extra onions": a qualifier starts a positive request
                self.qual, self.qual_text = ch.payload, ch.text
                before = self._prev(i)  # "two more cokes": a count of further items, not an amount
                self.qual_counts = before is not None and before.kind == "num" and before.text not in ("a", "an")
                continue
            elif k == "neg" and self.on_answer_no(i, ch):
                pass
            elif k == "neg":
                # a new negation word ("no spread, not toasted": the "not" negates toasted)
                self.neg, self.neg_count, self.neg_fields = True, self.neg_count if self.neg else 0, set()
                self.neg_word = ch.text.lower()
                self.on_dangling_neg(i, ch)
            elif k == "wait":
                self.on_wait(i, ch)
            elif k == "half":
                self.on_half(i, ch)
            elif k == "repeat":
                flags["repeat"] = True
            elif k in ("same", "unsupported"):
                self.out.doubts.append(ch.text)
            elif k == "all_items":
                flags["all_items"] = ch.text
            elif k == "subset":  # "toast one of them": what it says is reported, not added as a new item
                self.out.doubts.append(ch.text)
                self.cur = self._new_frame()
                self.cur.report_only = True
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
            elif k == "or" and not self.neg:
                prev, nxt = self._prev(i), self._next(i)
                if prev is not None and nxt is not None and prev.kind == "menu" and nxt.kind in ("menu", "num"):
                    self.out.doubts.append(ch.text)  # "a coke or a sprite": undecided, not both
            elif k == "and":
                nxt = self._next(i)
                if self.neg and not (self.neg_count and nxt is not None and nxt.kind == "menu"
                                     and not anchor_senses(nxt)):
                    self._end_neg()
                if self.cur is not None and self.cur.anchor:
                    self.cur.and_mark = len(self.cur.attrs)
            elif k in ("but", "boundary"):
                if k == "but" and not self.neg:
                    self.on_but(i, ch)
                self._end_neg()
                self.cross_dist = None
            elif k == "def":
                self.definite = True
                continue
            elif k == "cancel":
                self.cancel_next = True
                self.cancel_text = ch.text.lower()
                continue
            elif k == "modify":
                self.out.modify = True
                if ch.text.split()[-1] == "the":  # "make the pizza thin crust": a reference
                    self.definite = True
                    continue
                nxt = self._next(i)
                said = ch.text.lower().split()[-1] if nxt is None or nxt.kind != "def" else nxt.text.lower()
                if said in ("it", "that", "them", "those") and not self.out.frames:
                    self.out.modify_current = True  # "make it a cappuccino": the current item, renamed
                if ch.text.lower() == "instead" and i != self.replaced_at:
                    self.out.instead = True
            elif k == "unknown":
                self.out.unknown.append(ch.text)
                self.cancel_next = False  # "cancel the coke" (not on this menu): reported, not "cancel that"
                self.on_unknown(i)
            elif k in ("yes", "no_answer", "pickup", "delivery", "checkout", "cancel_all"):
                flags[k] = True
            elif k == "pay":
                flags["pay"] = ch.payload
            if k not in ("filler", "or"):
                if self.qual is not None:  # "make it a double": a quantity of nothing
                    self.out.doubts.append(self.qual_text)
                self.qual = None
        if self.qual is not None:
            self.out.doubts.append(self.qual_text)
        if self.neg and not self.neg_any:
            self.out.bare_negation = True
        # "forget it" takes the current item off; "never mind" alone takes back what was being said, not an item
        self.out.cancel_dangling = self.cancel_next and self.cancel_text not in ("never mind", "nevermind")
        if self.cancel_next and not self.out.cancel_dangling:
            flags["never_mind"] = True
        for pos in distribute(self.dists):
            if self.dist_texts[pos][1]:  # "no ice in either": the value came before ("in all" is a total)
                self.out.doubts.append(self.dist_texts[pos][0])
        split(self.out.frames)
        return self.out


def segment(chunks: list[Chunk], menu: Menu) -> Segmentation:
    return _Segmenter(chunks, menu).run()
