"""References to items already ordered, for the deterministic parser's frame builder (:mod:`parser`):
a change named by a reference ("make the pizza thin crust", "the one with olives, thin crust"), an
ordinal ("the second one"), a removal ("remove one coke" of three), and the doubts they raise.

A mixin of ``parser._Builder``: it uses the builder's ``menu``, ``tree``, ``seg``, ``out``,
``leftovers``, ``notes`` and ``ref``, and its ``_modify``.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from .frame_parts import Frame, Segmentation
from .menu import Menu
from .parsed_input import ParsedInput, ReferenceDoubt
from .references import current_item, diff_fields, find_ref, holds_all, live_items, name_field, said_as
from .resolve import resolve_frame
from .tree import OrderTask

ORDINAL_TEXT = {0: "first", 1: "second", 2: "third", 3: "fourth", -1: "last"}


class ReferenceRules:
    menu: Menu
    tree: OrderTask | None
    seg: Segmentation
    out: ParsedInput
    leftovers: list[str]
    notes: list[str]
    ref: int | None

    def _modify(self, idx: int, fields: dict[str, Any]) -> None:
        raise NotImplementedError

    def _holding(self, frame: Frame, fits: list[int]) -> list[int]:
        raise NotImplementedError

    def _over_the_order(self, frame: Frame, fits: list[int]) -> bool:
        raise NotImplementedError

    def _clearing(self, frame: Frame, fits: list[int], asked: int | None, cleared: set[str]) -> list[int]:
        """The lines a field cleared as a whole ("no toppings") is about: the one asked about if the question is
        that field's or it has some; else those that have some; else the one asked about if it may still be asked
        it ("no spread" while "toasted?" is pending declines it ahead)."""
        tree = self.tree
        assert tree is not None
        pending = tree.pending
        held = self._holding(frame, fits)
        if asked in fits and (asked in held or pending is not None and pending.field in cleared):
            return [asked]
        if held or asked not in fits:
            return held
        item = tree.items.items[asked]
        tdef = self.menu.item_types[item.item_type]
        ahead = any(f in tdef.fields and tdef.fields[f].question and f not in item.asked
                    and item.fields.get(f) in (None, []) for f in cleared)
        return [asked] if ahead else []

    def _cancel(self, frame: Frame, item_type: str, fields: dict[str, Any]) -> None:
        """ "remove the coke": the line it names; "remove one coke" of a line of three: one fewer; more than
        the line holds, several lines, or a second removal (which the parse can't hold): said, not guessed."""
        tree = self.tree
        idx, ambiguous = find_ref(tree, self.menu, item_type, fields) if tree is not None else (None, False)
        said = said_as(frame, self.menu, item_type)
        if idx is not None and tree is not None and frame.number is not None:
            held = tree.items.items[idx].fields.get("quantity") or 1
            count = int(frame.number) if float(frame.number).is_integer() else None
            if count is None or count > held:  # "remove three cokes" of two
                self.leftovers.append(said)
                return
            if count < held:
                self._modify(idx, {"quantity": held - count})
                return
        if idx is not None and self.out.cancel_item_index not in (None, idx):
            self.leftovers.append(said)  # "remove the pizza and the coke": one removal is all the parse can hold
        elif idx is not None:
            self.out.cancel_item_index = idx
        elif ambiguous:  # "cancel the coke" with a diet coke and a cherry coke: which one?
            self.leftovers.append(said)
        else:  # "cancel the latte" with no latte ordered: named in an error, not dropped
            self.out.cancel_item = said

    def _as_change(self, n: int, frame: Frame, item_type: str, fields: dict[str, Any], live: list[int]) -> bool:
        """A change of an item already ordered, named by a reference: "make the pizza thin crust", "change the
        bagel to sesame" (values after the noun are the change), "make the coke a diet coke", "make the bagel
        two", "make it a cappuccino", "make that two cokes", "make it two pizzas". True when handled."""
        tree = self.tree
        if tree is None:
            return False
        explicit_number = frame.number is not None and not frame.article
        # The values after "the" describing the line, and where they end (read once: resolved against the menu)
        description = self._description(frame, item_type) if frame.described_at is not None else None
        if frame.definite and not explicit_number and self._describes_no_line(frame, item_type, live, description):
            return True
        if frame.definite and not explicit_number:
            # "no ice in the small one": the line is found by its description, not by the change ("no ice")
            described = description[0] if description is not None else fields
            idx, ambiguous = find_ref(tree, self.menu, item_type, described, self._name_said(frame, item_type))
            if idx is None and self.seg.modify and frame.noun_at is not None:
                _t, said, _l = resolve_frame(replace(frame, attrs=frame.attrs[:frame.noun_at]), self.menu)
                idx, ambiguous = find_ref(tree, self.menu, item_type, said)
            if description is not None and (idx is not None or ambiguous):
                fields = self._beside(frame, item_type, description[1])  # "make the small one a large"
            if idx is not None:
                self.ref = idx
                changes = diff_fields(tree.items.items[idx], fields)
                for key in described if frame.described_at is not None else ():
                    if changes.get(key) == described[key]:  # "the small one" finds the line, never resizes it
                        changes.pop(key)
                if self._names_the_reference(frame, item_type):
                    changes.pop(name_field(self.menu, item_type) or "", None)  # "the coke" named the diet coke
                if not changes and frame.joined_by_and and self.out.cancel_item_index not in (None, idx):
                    # "remove the pizza and the coke": a second removal, which the parse can't hold - said
                    self.leftovers.append(said_as(frame, self.menu, item_type))
                self._modify(idx, changes)
                return True
            if ambiguous:  # "make the coke large" with two lines of coke: which one? not a new line either
                same = [i for i in live if tree.items.items[i].item_type == item_type]
                if not frame.has_noun and frame.anchor is None and self._over_the_order(frame, same):
                    return True  # "remove the bacon from both"
                held = self._holding(frame, same)
                if len(held) == 1:  # "remove the olives" with two pizzas, one with olives: that one
                    self.ref = held[0]
                    self._modify(held[0], diff_fields(tree.items.items[held[0]], fields))
                    return True
                said = said_as(frame, self.menu, item_type)
                self.leftovers.append(said)
                # "remove the bacon" with two bagels holding it: the change is kept for the caller's "which one?"
                # (or "both"), without what describes the lines (every one holds it) or names them ("the coke")
                cands = held or same
                change = {k: v for k, v in fields.items()
                          if not all(tree.items.items[i].fields.get(k) == v for i in cands)}
                if self._names_the_reference(frame, item_type):
                    change.pop(name_field(self.menu, item_type) or "", None)
                if change and self.out.reference is None:
                    self.out.reference = ReferenceDoubt(said=said, fields={item_type: change}, items=cands)
                return True
            if live and frame.has_noun:  # "no ice in the drink" with no drink ordered: not a new line
                said = said_as(frame, self.menu, item_type)
                self.leftovers.append(said)
                self._reference_doubt(frame, said, [item_type], new_item=True)  # offered, not guessed
                return True
        ref = self.ref
        if (ref is not None and self.seg.modify and not frame.definite
                and (frame.article or frame.anchor is None and not frame.attrs and explicit_number)):
            ref_type = tree.items.items[ref].item_type
            if ref_type != item_type and frame.article and not frame.joined_by_and:
                # "make the first one a diet coke" (a combo): the combo's drink, if it takes it; else not a new line
                _t, fields, left = resolve_frame(replace(frame, anchor=ref_type, number=None), self.menu)
                if not fields or left:
                    self.leftovers.append(said_as(frame, self.menu, item_type))
                    return True
                item_type = ref_type
            if ref_type == item_type:
                self._modify(ref, diff_fields(tree.items.items[ref], fields))
                return True
        target = current_item(tree)
        target_it = tree.items.items[target] if target is not None else None
        if n != 0 or not self.seg.modify_current:
            return False
        if (frame.number is not None and target is not None and target_it is not None
                and target_it.item_type == item_type and not frame.has_noun):
            self._modify(target, diff_fields(target_it, fields))
            return True
        if explicit_number and frame.has_noun:
            same = [i for i in live if tree.items.items[i].item_type == item_type]
            if len(same) == 1:
                self._modify(same[0], diff_fields(tree.items.items[same[0]], fields))
                return True
        if target_it is not None and frame.anchor is not None and target_it.item_type != item_type:
            self.leftovers.append(said_as(frame, self.menu, item_type))  # "make it a combo": a burger can't become one
            return True
        return False

    def _describes_no_line(self, frame: Frame, item_type: str, live: list[int],
                           description: tuple[dict[str, Any], int] | None) -> bool:
        """ "no olives on the small pizza" with one large pizza: the values after "the" describe no line - a
        reference to nothing, asked about ("which one?"), never merged into the only line (made small)."""
        tree = self.tree
        if description is None or frame.described_at is None or tree is None:
            return False
        want, end = description
        desc = frame.attrs[frame.described_at:end]
        want = dict(want)
        want.pop(name_field(self.menu, item_type) or "", None)  # "the coke" names the diet coke: find_ref's
        same = [i for i in live if tree.items.items[i].item_type == item_type]
        if not want or not same or any(holds_all(tree.items.items[i], want) for i in same):
            return False
        said = " ".join(["the", *(a.text for a in desc), self.menu.item_types[item_type].label])
        self.leftovers.append(said)
        change = frame.attrs[:frame.described_at] + frame.attrs[end:]
        self._reference_doubt(replace(frame, attrs=change), " ".join([*(a.text for a in change), said]),
                              [item_type], items=same)
        return True

    def _beside(self, frame: Frame, item_type: str, end: int) -> dict[str, Any]:
        """The change said beside a description ("make the small one a large": "large"), resolved without it: a
        value of the field the description names is the new value, not a second one the frame can't hold - the
        frame's doubt about that (see :meth:`_Builder.frames`) is taken back; the others stay ("the small large
        pizza": two sizes in the description itself)."""
        start = frame.described_at or 0
        change = replace(frame, attrs=frame.attrs[:start] + frame.attrs[end:], anchor=item_type)
        _t, fields, left = resolve_frame(change, self.menu)
        _t, _f, own = resolve_frame(replace(frame, attrs=frame.attrs[start:end], anchor=item_type), self.menu)
        _t, _f, whole = resolve_frame(replace(frame, anchor=item_type), self.menu)
        for text in whole:
            if text in self.leftovers and text not in left and text not in own:
                self.leftovers.remove(text)
        return fields

    def _description(self, frame: Frame, item_type: str) -> tuple[dict[str, Any], int]:
        """The values after "the" describing the line referred to ("the small pepperoni pizza"), and where they
        end in the frame's values."""
        start = frame.described_at or 0
        end = frame.noun_at if frame.noun_at is not None and frame.noun_at > start else len(frame.attrs)
        if frame.described_end is not None and start < frame.described_end < end:
            end = frame.described_end  # "no ice in the small one, extra ice": "extra ice" is no description
        _t, fields, _l = resolve_frame(replace(frame, attrs=frame.attrs[start:end], anchor=item_type), self.menu)
        return fields, end

    def _names_the_reference(self, frame: Frame, item_type: str) -> bool:
        """The item's name was said once, before any noun: it names the item referred to ("make the coke large"),
        it is no change of it ("make the drink a coke", "make the coke a diet coke" say the new name after)."""
        key = name_field(self.menu, item_type)
        named = [k for k, a in enumerate(frame.attrs) if any(s.item_type == item_type and s.field == key
                                                             for s in a.senses)]
        end = frame.noun_at if frame.noun_at is not None else len(frame.attrs)
        return len(named) == 1 and named[0] < end

    def _name_said(self, frame: Frame, item_type: str) -> str | None:
        """The words that named the item ("shake" in "make the shake large")."""
        key = name_field(self.menu, item_type)
        return next((a.text for a in frame.attrs
                     if any(s.item_type == item_type and s.field == key for s in a.senses)), None)

    def _fills_missing(self, item_type: str, fields: dict[str, Any]) -> bool:
        """ "medium, and a sprite" while the combo still has no drink: a new sprite, or the combo's drink? The
        new item's name is a value a required field of an ordered item still lacks - not guessed."""
        tree = self.tree
        if tree is None:
            return False
        tdef = self.menu.item_types[item_type]
        named = [(f, v) for f, v in fields.items() if f in tdef.fields and tdef.fields[f].names_item]
        for idx in live_items(tree):
            item = tree.items.items[idx]
            if item.item_type == item_type:
                continue
            for name, fdef in self.menu.item_types[item.item_type].fields.items():
                if fdef.required and item.fields.get(name) in (None, []) and any(
                        fdef.value(str(v)) is not None for _f, v in named):
                    return True
        return False

    def _ordinal(self, frame: Frame) -> bool:
        """ "make the second one thin crust", "the first one with lox", "forget the last one": item n of the
        live items (of the type, when named: "the second pizza"). Out of range: flagged."""
        tree = self.tree
        if frame.ordinal is None or tree is None or not live_items(tree):
            return False
        if frame.anchor is not None and frame.inherit is not None:
            return False  # a part of this message's own split ("two pizzas, the first with ham")
        live = [i for i in live_items(tree) if frame.anchor is None or tree.items.items[i].item_type == frame.anchor]
        n = frame.ordinal
        idx = live[n] if -len(live) <= n < len(live) else None
        said = f"the {ORDINAL_TEXT.get(n, str(n + 1))} one"
        if idx is None:
            if frame.cancel:
                self.out.cancel_item = f"{ORDINAL_TEXT.get(n, str(n + 1))} item"
            else:
                self.leftovers.append(said)
                self._reference_doubt(frame, said)
            return True
        if frame.cancel:
            if self.out.cancel_item_index not in (None, idx):
                self.leftovers.append(said)  # a second removal: see frames()
            else:
                self.out.cancel_item_index = idx
            return True
        self.ref = idx
        item = tree.items.items[idx]
        _t, fields, left = resolve_frame(replace(frame, anchor=item.item_type, number=None), self.menu, self.notes)
        self.leftovers.extend(left)
        changes = diff_fields(item, fields)
        if changes:
            self._modify(idx, changes)
        elif left:  # "make the second one thin crust" when the second is a coke: which one was meant?
            self._reference_doubt(frame, said)
        return True

    def _reference_doubt(self, frame: Frame, said: str, types: list[str] | None = None, items: list[int] | None = None,
                         new_item: bool = False) -> None:
        """Keep the change asked of an item not found, per item type that takes all of it (see ReferenceDoubt):
        of ``types`` when given, and ``items`` the live items it could be."""
        per_type = {}
        for item_type in types if types is not None else self.menu.item_types:
            _t, fields, left = resolve_frame(replace(frame, anchor=item_type, number=None), self.menu)
            if fields and not left:
                per_type[item_type] = fields
        if per_type and self.out.reference is None:
            self.out.reference = ReferenceDoubt(said=said, fields=per_type, items=items or [], new_item=new_item)
