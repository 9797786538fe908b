"""Menu-grounded deterministic parser: text (+ current tree) -> ParsedInput.

Pipeline: contacts extracted -> tokenize -> lexicon chunks -> frames (frames.py)
-> each frame resolved to an item type and its fields -> frames interpreted against
the current order (new item, answer to the pending question, modification of an
existing item, cancellation) -> intents (yes/no, pickup/delivery, checkout, payment,
name, contact) -> confidence.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from .frames import Frame, Segmentation, segment
from .lexicon import get_lexicon
from .menu import Menu, entry_name
from .parse_checks import item_named_by_a_part, unused_negations
from .parse_intents import GLUE, address_said, answers_the_name, name_said, read_intents
from .parse_refs import ORDINAL_TEXT, ReferenceRules
from .parsed_input import Modification, ParsedInput, ParsedItem, ReferenceDoubt
from .references import clears_only, current_item, diff_fields, find_item, fitting_types, live_items, positive, said_as
from .resolve import name_conflicts, resolve_frame
from .substitution import substitution
from .tokens import extract_contacts, tokenize
from .tree import OrderTask

# a question about the menu, not an order ("is the blueberry bagel good", "do you have gluten free crust?")
_QUESTION_RE = re.compile(r"^\s*(?:is|are|was|does|do you|did|what|what's|whats|which|how|why|when|where|who)\b"
                          r"(?! are you| is it going|'s it going| you doing| are ya| is your)", re.IGNORECASE)
_REQUEST_RE = re.compile(r"^\s*(?:can|could|may|would|will|i|i'd|id|i'll|ill|let me|please|and|yes|yeah)\b",
                         re.IGNORECASE)
# a whole message that is a street address ("12 Rose Lane"), said without being asked: not "12 roses"
_BARE_ADDRESS_RE = re.compile(r"^\s*(?:it'?s\s+|deliver(?: it)? to\s+)?(\d+[a-z]?\s+(?:[a-z'.\-]+\s+){1,4}"
                              r"(?:street|st|avenue|ave|road|rd|boulevard|blvd|lane|ln|drive|dr|way|court|ct|place|pl|"
                              r"terrace|circle|square|sq|parkway|pkwy|highway|hwy|close|crescent|mews))\.?\s*$",
                              re.IGNORECASE)


class _Builder(ReferenceRules):
    def __init__(self, menu: Menu, tree: OrderTask | None, seg: Segmentation, chunks: list[Any]) -> None:
        self.menu, self.tree, self.seg, self.chunks = menu, tree, seg, chunks
        self.out = ParsedInput()
        self.leftovers: list[str] = []
        self.free_text = False  # the whole message was a name/address answer
        self.notes: list[str] = []  # "corrected": a value said after "wait" replaced an earlier one
        self.ref: int | None = None  # the item a definite noun of this message referred to ("make the coke ...")

    def frames(self) -> None:
        tree = self.tree
        pending = tree.pending if tree is not None else None
        prev: Frame | None = None
        for n, frame in enumerate(self.seg.frames):
            prev, before = frame, prev
            if frame.negated:  # "I don't want a latte": not ordered; taken off if it was
                item_type, fields, _left = resolve_frame(positive(frame), self.menu)
                idx = find_item(tree, self.menu, item_type, fields) if tree is not None and item_type else None
                if idx is not None:
                    self.out.cancel_item_index = idx
                continue
            if frame.unknown_head:  # "a big mac": the values describe an item the menu doesn't have
                self.leftovers.extend(a.text for a in frame.attrs[: len(frame.attrs) - frame.name_attrs])
                continue
            if frame.report_only:  # "a warm sesame bagel": "warm" is no bagel value, and no item of its own
                self.leftovers.extend(a.text for a in frame.attrs)
                continue
            if self._ordinal(frame):
                continue
            if frame.ordinal is not None and frame.anchor is None:
                # "a number 1 and a number 2, the first with a coke": a reference inside the message the
                # split didn't resolve - not guessed
                said = f"the {ORDINAL_TEXT.get(frame.ordinal, str(frame.ordinal + 1))}"
                self.leftovers.append(" ".join([said] + [a.text for a in frame.attrs]))
                continue
            item_type, fields, left = resolve_frame(frame, self.menu, self.notes)
            self.leftovers.extend(left)
            if item_type is None:
                self._bare(frame)
                continue
            self.leftovers.extend(name_conflicts(self.menu, item_type, fields))
            explicit_number = frame.number is not None and not frame.article
            if frame.cancel:
                self._cancel(frame, item_type, fields)
                continue
            live = live_items(tree)
            if frame.pronoun and frame.anchor is None and live and self._pronoun(frame):
                continue  # "and a small one with olives": another item of the kind already ordered
            if before is not None and self._ingredient_count(frame, before, item_type):
                self.leftovers.extend(a.text for a in frame.attrs)  # "a latte with milk and one sugar"
            if before is not None and frame.follows_with and item_type in self.menu.item_types[
                    before.anchor or before.inherit or item_type].includes:
                self.leftovers.append(said_as(frame, self.menu, item_type))  # "a number 3 with curly fries"
            if self._with_elsewhere(frame, before, item_type):
                self.leftovers.append(said_as(frame, self.menu, item_type))  # "a bagel with honey" (a coffee's)
                continue
            target = current_item(tree)
            target_it = tree.items.items[target] if tree is not None and target is not None else None
            if self._as_change(n, frame, item_type, fields, live):
                continue
            if (pending is not None and pending.task == "item" and target_it is not None and pending.field
                    and not explicit_number and not frame.has_noun and target_it.item_type != item_type):
                _alt_type, alt_fields, alt_left = resolve_frame(replace(frame, anchor=target_it.item_type), self.menu)
                missing = {f for f in target_it.required if target_it.fields.get(f) in (None, [])}
                # "coke" answering "what drink comes with the combo?"; "medium with a diet coke" answering its size
                if (pending.field in alt_fields or frame.follows_with and alt_fields and set(alt_fields) <= missing
                        ) and (not alt_left or pending.field in alt_fields and frame.article):
                    self.leftovers = self.leftovers[: len(self.leftovers) - len(left)] + alt_left
                    self._answer(alt_fields)  # "coke" answering "what drink comes with the combo?"
                    continue
            if frame.anchor is None and not explicit_number and live:
                self._bare_values(frame, left)  # "thin crust", "bottle": about an item already ordered
                continue
            if target_it is not None and target_it.item_type == item_type and not explicit_number:
                answering = pending is not None and pending.task == "item" and pending.item_index == target
                if answering and pending is not None and pending.field in fields and all(
                    target_it.fields.get(k) in (None, [], v) or k in target_it.defaulted
                    for k, v in fields.items()
                ):
                    self._answer(fields)  # "a sesame bagel" answering "what kind of bagel?"
                    continue
            if not fields and frame.anchor is None:
                continue
            types = fitting_types(frame, self.menu)
            if frame.anchor is None and len(types) > 1 and frame.inherit is None:
                said = " ".join(a.text for a in frame.attrs)
                self.leftovers.append(said)  # "large" alone: a large what? Not guessed (a combo), kept to offer
                self._reference_doubt(frame, said, types, new_item=True)
                continue
            if self.seg.opens_with_correction and tree is not None and any(
                    tree.items.items[i].item_type == item_type for i in live):
                self.leftovers.append(said_as(frame, self.menu, item_type))  # "actually a pepsi": instead of the coke?
            if self._fills_missing(item_type, fields) or item_named_by_a_part(frame, self.menu, item_type):
                self.leftovers.append(said_as(frame, self.menu, item_type))
            self.out.new_items.append(ParsedItem(item_type=item_type, fields=fields))

    @staticmethod
    def _with_elsewhere(frame: Frame, before: Frame | None, item_type: str) -> bool:
        """ "a sesame bagel with honey" where honey only sweetens a coffee: a bare value said "with" an item
        that can't take it is no order of its own (no article, number, noun or item name, unlike "with coke")
        - it was meant for that item."""
        owner = before.anchor or before.inherit if before is not None else None
        names = any(s.names_item and s.item_type == item_type for a in frame.attrs for s in a.senses)
        return (frame.follows_with and owner is not None and owner != item_type and not frame.article
                and frame.number is None and not frame.has_noun and not names)

    def _pronoun(self, frame: Frame) -> bool:
        """ "a small one with olives" opening a message: a new item of the latest type ordered that takes it."""
        tree = self.tree
        assert tree is not None
        types = fitting_types(frame, self.menu)
        kinds = [tree.items.items[i].item_type for i in live_items(tree)]
        kind = next((k for k in reversed(kinds) if k in types), None)
        if kind is None:
            return False
        _t, fields, left = resolve_frame(replace(frame, anchor=kind), self.menu, self.notes)
        self.leftovers.extend(left)
        self.out.new_items.append(ParsedItem(item_type=kind, fields=fields))
        return True

    def _ingredient_count(self, frame: Frame, before: Frame, item_type: str) -> bool:
        """ "a latte with whole milk and one sugar": a number straight before an ingredient of the item just
        described (a "with" list) counts the ingredient, not a new item - which the parse can't say."""
        if frame.anchor is not None or frame.number is None or frame.article or frame.after_with or not frame.attrs:
            return False
        if before.with_mark is None or (before.anchor or before.inherit) != item_type:
            return False
        tdef = self.menu.item_types[item_type]
        said = {s.field for a in frame.attrs for s in a.senses if s.item_type == item_type and s.field}
        return bool(said) and all(tdef.fields[f].with_list for f in said)

    def _bare_values(self, frame: Frame, left: list[str]) -> None:
        """Values with no noun once items exist: they answer or change the item they fit - the pending
        one, else the only one of a type that takes them. Several candidates: flagged, not guessed."""
        tree, pending = self.tree, self.tree.pending if self.tree is not None else None
        assert tree is not None
        if left:  # resolved again below, against the item they are about
            del self.leftovers[len(self.leftovers) - len(left):]
        types = fitting_types(frame, self.menu)
        fits = [i for i in live_items(tree) if tree.items.items[i].item_type in types]
        if self._over_the_order(frame, fits):
            return
        said = " ".join(a.text for a in frame.attrs)
        asked = pending.item_index if pending is not None and pending.task == "item" else None
        cleared = clears_only(frame, self.menu)
        if cleared:  # "no toppings": the lines that have some, or the one asked about that may still get some
            fits = self._clearing(frame, fits, asked, cleared)
            if not fits:  # "no spread" after a latte, "no toppings" with none on any line: nothing to take off
                self.out.reference = self.out.reference or ReferenceDoubt(said=said, nothing_held=True)
                return  # (a negation that left no trace: flagged)
        if not fits:
            # "honey" after a bagel, "large pepperoni" after a coke: no item ordered takes it. Reported, and no new
            # line is guessed as well (a parse never both refuses words and applies them): the values per item
            # type that takes them are kept, so that the caller can offer that item ("a coffee with honey?")
            item_type, fields, left = resolve_frame(frame, self.menu, self.notes)
            self.leftovers.extend(left)
            if item_type is not None and fields:
                self.leftovers.extend(a.text for a in frame.attrs)
                self._reference_doubt(frame, said, fitting_types(frame, self.menu), new_item=True)
            return
        if asked not in fits and len(fits) > 1 and not cleared:
            fits = self._holding(frame, fits) or fits  # "remove the olives": the one item that has them
        if asked in fits or len(fits) == 1:
            idx = asked if asked in fits else fits[0]
        else:  # "bottle" with a coke and a sprite, no question pending about either: which one? not guessed
            self.leftovers.extend(a.text for a in frame.attrs)
            # "remove the bacon" with two bagels holding it, "make it small" with two pizzas: the caller asks
            self._reference_doubt(frame, said, sorted({tree.items.items[i].item_type for i in fits}), items=fits)
            return
        _t, fields, left2 = resolve_frame(replace(frame, anchor=tree.items.items[idx].item_type), self.menu, self.notes)
        self.leftovers.extend(left2)
        answering = pending is not None and pending.task == "item" and pending.item_index == idx
        if answering and not self.seg.modify and (not cleared or pending is not None and pending.field in cleared):
            self._answer(fields)
        else:
            self._modify(idx, fields)

    def _holding(self, frame: Frame, fits: list[int]) -> list[int]:
        """The items among ``fits`` that hold every value ``frame`` takes off (its fields all ``excluded_*``, cleared
        - something in the field - or yes/no turned off - on); none when it does more than take values off."""
        tree = self.tree
        assert tree is not None
        held = []
        for i in fits:
            item = tree.items.items[i]
            _t, fields, _left = resolve_frame(replace(frame, anchor=item.item_type), self.menu)
            if not fields or any(not k.startswith("excluded_") and v not in (None, False) for k, v in fields.items()):
                return []
            names = {entry_name(e) for k, v in fields.items() if k.startswith("excluded_") for e in v}
            current = {entry_name(e) for k in fields if k.startswith("excluded_")
                       for e in item.fields.get(k.removeprefix("excluded_")) or []}
            # "no toppings" (a field cleared, ``None``): the lines that have something in it; "no ice" (a yes/no
            # field turned off): the lines that have it on
            if names <= current and all(item.fields.get(k) not in (None, [], False) for k, v in fields.items()
                                        if not k.startswith("excluded_")):
                held.append(i)
        return held

    def _over_the_order(self, frame: Frame, fits: list[int]) -> bool:
        """ "both large" with a coke and fries ordered: the values go to every live item (the two of "both"); values
        taken off ("remove the bacon from both", "no onions on either") go to the lines holding them. An item that
        can't take them, or a count that doesn't match, is a doubt: nothing is changed."""
        tree = self.tree
        said = self.seg.flags.get("dist_order")
        if tree is None or said is None or len(self.seg.frames) != 1:
            return False
        text, count = said
        live = live_items(tree)
        if len(live) < 2:  # "both toasted" over one line of two bagels: that line, as any bare value
            return False
        targets: list[int] | None = live
        if fits != live:  # "remove the bacon from both": the lines that hold it, when they are the ones counted
            held = self._holding(frame, fits)
            targets = held or None
            if len(held) == 1:  # "no onions on either" with a cheeseburger and fries: the one line that has them
                count = None
        if targets is None or (count is not None and len(targets) != count):
            self.leftovers.extend([text] + [a.text for a in frame.attrs])
            return True
        for idx in targets:
            _t, fields, left = resolve_frame(replace(frame, anchor=tree.items.items[idx].item_type), self.menu,
                                             self.notes)
            self.leftovers.extend(left)
            self._modify(idx, diff_fields(tree.items.items[idx], fields))
        return True

    def _bare(self, frame: Frame) -> None:
        """A frame naming no item: "make it 3" (a quantity)."""
        tree = self.tree
        if tree is None or frame.attrs:
            return
        target = current_item(tree)
        if frame.number is not None and not frame.article and self.seg.modify and target is not None:
            qty = int(frame.number) if float(frame.number).is_integer() else frame.number
            self.out.modifications.append(Modification(item_index=target, field="quantity", new_value=qty))

    def _answer(self, fields: dict[str, Any]) -> None:
        for k, v in fields.items():
            if isinstance(v, list) and isinstance(self.out.answers.get(k), list):
                self.out.answers[k] = self.out.answers[k] + [x for x in v if x not in self.out.answers[k]]
            else:
                self.out.answers[k] = v

    def _modify(self, idx: int, fields: dict[str, Any]) -> None:
        item = self.tree.items.items[idx] if self.tree is not None and idx < len(self.tree.items.items) else None
        for k, v in fields.items():
            if self.seg.instead and item is not None and isinstance(v, list) and item.fields.get(k):
                self.leftovers.append("instead")  # "make it pepperoni instead": replace the ham, or add? not guessed
            self.out.modifications.append(Modification(item_index=idx, field=k, new_value=v))

def parse_deterministic(text: str, menu: Menu, tree: OrderTask | None = None) -> ParsedInput:
    """Parse one customer message against ``menu``; ``tree`` gives answers/modifications their target.

    ``confidence`` is the share of content words resolved, a misspelling correction counting half;
    anything said but not representable (see ``unparsed``) and structural doubts lower it - see
    docs/order_engine.md, "Confidence".
    """
    bare_address = _BARE_ADDRESS_RE.match(text)
    if bare_address:
        return ParsedInput(address=bare_address.group(1).strip(), order_type="delivery")
    lex = get_lexicon(menu)
    clean, contacts = extract_contacts(text)
    name, clean = name_said(clean, lex)
    address, clean = address_said(clean)
    chunks = lex.chunk(tokenize(clean))
    swap = substitution(clean, chunks, menu, tree) if not (contacts or name or address) else None
    if swap:  # "change the pepperoni to sausage", and nothing else: what "sausage instead of pepperoni" does
        return ParsedInput(modifications=swap)
    seg = segment(chunks, menu)
    builder = _Builder(menu, tree, seg, chunks)
    if not answers_the_name(chunks, tree, menu):
        builder.frames()
    read_intents(builder, text, contacts, name, address)
    builder.leftovers.extend(unused_negations(chunks, builder.out))
    out = builder.out
    out.repeat_last = bool(seg.flags.get("repeat"))
    if seg.flags.get("all_items") and len(live_items(tree)) + len(seg.frames) >= 2:
        builder.leftovers.append(seg.flags["all_items"])  # "make everything large": every line? not represented
    if _QUESTION_RE.match(clean) or (clean.rstrip().endswith("?") and not _REQUEST_RE.match(clean)):
        builder.leftovers.append(clean.strip(" ?"))  # a question: answered by a person or the LLM, not ordered
    out.unparsed = [] if builder.free_text else _spans(chunks) + builder.leftovers + seg.doubts
    if out.is_empty() and not out.unparsed and _has_content(chunks, seg):
        out.unparsed = [text.strip(" .!?")]  # "make it 0" with nothing to act on: said, not understood
    unresolved = sum(len(s.split()) for s in out.unparsed)
    guessed = sum(c.fuzzy for c in chunks) / 2
    confidence = 1.0 - (unresolved + guessed) / max(seg.content, 1)
    if out.is_empty():
        confidence = min(confidence, 0.0 if unresolved or not seg.content else 0.5)
    if out.repeat_last:
        confidence = min(confidence, 0.5)  # the parser doesn't rebuild the last line: the caller must
    if "corrected" in builder.notes:
        confidence = min(confidence, 0.7)  # "butter, no wait, jam": the last value was taken - a guess
    out.confidence = round(max(0.0, min(1.0, confidence)), 3)
    return out


def referenced_item(text: str, menu: Menu, tree: OrderTask) -> int | None:
    """The one live item a message names by reference ("the coke", "the second one", "the pizza"), if any: the
    answer to "which one do you mean?"."""
    lex = get_lexicon(menu)
    clean, _contacts = extract_contacts(text)
    chunks = lex.chunk(tokenize(clean))
    seg = segment(chunks, menu)
    if len(seg.frames) != 1:
        return None
    builder = _Builder(menu, tree, seg, chunks)
    builder.frames()
    return builder.ref


def _has_content(chunks: list[Any], seg: Segmentation) -> bool:
    glue = GLUE | {"neg"} if seg.bare_negation else GLUE
    if seg.flags.get("never_mind"):  # "never mind" alone: nothing to act on, like "hold on"
        glue = glue | {"cancel"}
    return any(c.kind not in glue for c in chunks)


def _spans(chunks: list[Any]) -> list[str]:
    spans: list[str] = []
    prev_end = -1
    for ch in chunks:
        if ch.kind != "unknown":
            continue
        if ch.start == prev_end and spans:
            spans[-1] += " " + ch.text
        else:
            spans.append(ch.text)
        prev_end = ch.end
    return spans
