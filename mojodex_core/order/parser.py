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

from .frames import Attr, Frame, Segmentation, segment
from .lexicon import extract_contacts, get_lexicon, tokenize
from .menu import Menu
from .parsed_input import Modification, ParsedInput, ParsedItem
from .tree import ItemTask, OrderTask

_NAME_RE = re.compile(r"\b(?:my name is|my name's|name is|name's|call me|under the name(?: of)?)\s+"
                      r"([a-z][a-z'\-]*(?:\s+[a-z][a-z'\-]*)?)", re.IGNORECASE)
_NAME_PREFIX_RE = re.compile(r"^\s*(?:it'?s|it is|this is|i'?m|i am|for|under|name'?s|my name is|"
                             r"the name is|put it under)\s+", re.IGNORECASE)
_STREET_RE = re.compile(r"\d|\b(?:street|st|avenue|ave|road|rd|boulevard|blvd|lane|ln|drive|dr|way|court|ct|"
                        r"place|pl|highway|hwy|parkway|pkwy|terrace|circle|square|sq|alley|row|apt|apartment|"
                        r"suite|unit|floor|building|plaza|close|crescent|mews)\b\.?", re.IGNORECASE)
# chunk kinds that carry no content of their own: a message made only of these says nothing to act on
_GLUE = frozenset({"filler", "boundary", "yes", "no_answer", "def", "and", "or", "but"})
_REFUSAL = frozenset({"yes", "no_answer", "neg", "cancel", "cancel_all", "modify", "checkout"})
_ORDINAL_TEXT = {0: "first", 1: "second", 2: "third", 3: "fourth", -1: "last"}
_ADDRESS_RE = re.compile(r"\b(?:deliver(?:ed)?(?: it)?|bring it|send it|delivery)\s+(?:to|at)\s+(.+)$",
                         re.IGNORECASE)


def resolve_frame(frame: Frame, menu: Menu) -> tuple[str | None, dict[str, Any], list[str]]:
    """Item type, fields and leftover attribute texts of one frame."""
    item_type = frame.anchor or _infer_type(frame, menu)
    if item_type is None:
        return None, {}, [a.text for a in frame.attrs]
    tdef = menu.item_types[item_type]
    fields: dict[str, Any] = {}
    leftovers: list[str] = []
    if frame.number is not None and not frame.article:
        fields["quantity"] = int(frame.number) if float(frame.number).is_integer() else frame.number
    for attr in frame.attrs:
        sense = next((s for s in attr.senses if s.item_type == item_type), None)
        if sense is None or sense.field is None:
            leftovers.append(attr.text)
            continue
        if not _apply_attr(fields, sense.field, tdef.fields[sense.field], sense.value, attr):
            leftovers.append(attr.text)
    return item_type, fields, leftovers


def _apply_attr(fields: dict[str, Any], name: str, fdef: Any, value: Any, attr: Attr) -> bool:
    """Put one attribute into ``fields``; False when it conflicts with a value already said."""
    if fdef.kind == "bool":
        new = (not value) if attr.negated else value
        if name in fields and fields[name] != new:
            return False  # "toasted ... not toasted": ask, don't guess
        fields[name] = new
        return True
    entry: Any = value
    if fdef.qualifiers:
        entry = {"name": value, "quantity": attr.qualifier} if attr.qualifier else {"name": value}
    if attr.negated and fdef.negatable:
        bucket = fields.setdefault(f"excluded_{name}", [])
        if entry not in bucket:
            bucket.append(entry)
        return True
    if attr.negated and attr.neg_direct and not fdef.multi:
        return True  # "a plain bagel, no onions": a single choice that is not onion - never the value
    # a non-negatable value later in a negation scope ("without cheese in a small pie") is positive
    if fdef.multi:
        bucket = fields.setdefault(name, [])
        if entry not in bucket:
            bucket.append(entry)
    elif name in fields and fields[name] != entry:
        return False  # two values for one single choice ("a sesame onion bagel"): not silently overwritten
    else:
        fields[name] = entry
    return True


def _infer_type(frame: Frame, menu: Menu) -> str | None:
    if not frame.attrs:
        return frame.inherit
    candidates = [t for t in menu.item_types if all(t in {s.item_type for s in a.senses} for a in frame.attrs)]
    if not candidates:
        counts = {t: sum(t in {s.item_type for s in a.senses} for a in frame.attrs) for t in menu.item_types}
        best = max(counts.values())
        candidates = [t for t, c in counts.items() if c == best and c > 0]
    if frame.inherit in candidates:
        return frame.inherit
    return candidates[0] if candidates else None


def _name_field(menu: Menu, item_type: str) -> str | None:
    for name, fdef in menu.item_types[item_type].fields.items():
        if fdef.names_item or name.endswith("_type"):
            return name
    return None


def _find_item(tree: OrderTask, menu: Menu, item_type: str, fields: dict[str, Any]) -> int | None:
    """Index of the last live item of this type (and same name value, when one was said)."""
    key = _name_field(menu, item_type)
    for idx in range(len(tree.items.items) - 1, -1, -1):
        it = tree.items.items[idx]
        if it.status == "skipped" or it.item_type != item_type:
            continue
        if key and key in fields and it.fields.get(key) != fields[key]:
            continue
        return idx
    return None


def _target_item(tree: OrderTask | None) -> int | None:
    """The item a bare answer/modification refers to: the pending one, else the current, else the last."""
    if tree is None:
        return None
    if tree.pending is not None and tree.pending.task == "item":
        return tree.pending.item_index
    live = [(i, it) for i, it in enumerate(tree.items.items) if it.status != "skipped"]
    for i, it in live:
        if it.status == "in_progress":
            return i
    return live[-1][0] if live else None


def _said(frame: Frame, menu: Menu, item_type: str) -> str:
    """What the customer called the item of a frame ("latte", "large pizza")."""
    words = [a.text for a in frame.attrs]
    if frame.has_noun or not words:
        words.append(menu.item_types[item_type].label)
    return " ".join(words)


def _positive(frame: Frame) -> Frame:
    return replace(frame, attrs=[replace(a, negated=False) for a in frame.attrs])


def _diff_fields(item: ItemTask, fields: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in fields.items() if item.fields.get(k) != v or k in item.defaulted}


class _Builder:
    def __init__(self, menu: Menu, tree: OrderTask | None, seg: Segmentation, chunks: list[Any]) -> None:
        self.menu, self.tree, self.seg, self.chunks = menu, tree, seg, chunks
        self.out = ParsedInput()
        self.leftovers: list[str] = []
        self.free_text = False  # the whole message was a name/address answer

    def frames(self) -> None:
        tree = self.tree
        pending = tree.pending if tree is not None else None
        for frame in self.seg.frames:
            if frame.negated:  # "I don't want a latte": not ordered; taken off if it was
                item_type, fields, _left = resolve_frame(_positive(frame), self.menu)
                idx = _find_item(tree, self.menu, item_type, fields) if tree is not None and item_type else None
                if idx is not None:
                    self.out.cancel_item_index = idx
                continue
            item_type, fields, left = resolve_frame(frame, self.menu)
            self.leftovers.extend(left)
            if item_type is None:
                self._bare(frame)
                continue
            explicit_number = frame.number is not None and not frame.article
            if frame.cancel:
                idx = _find_item(tree, self.menu, item_type, fields) if tree is not None else None
                if idx is not None:
                    self.out.cancel_item_index = idx
                else:  # "cancel the latte" with no latte ordered: named in an error, not dropped
                    self.out.cancel_item = _said(frame, self.menu, item_type)
                continue
            if tree is not None and frame.definite and not explicit_number:
                idx = _find_item(tree, self.menu, item_type, fields)
                if idx is not None:
                    self._modify(idx, _diff_fields(tree.items.items[idx], fields))
                    continue
            target = _target_item(tree)
            target_item = tree.items.items[target] if tree is not None and target is not None else None
            if (pending is not None and pending.task == "item" and target_item is not None and pending.field
                    and not explicit_number and not frame.has_noun and target_item.item_type != item_type):
                _alt_type, alt_fields, alt_left = resolve_frame(replace(frame, anchor=target_item.item_type), self.menu)
                if pending.field in alt_fields and not alt_left:
                    self.leftovers = self.leftovers[: len(self.leftovers) - len(left)]
                    self._answer(alt_fields)  # "coke" answering "what drink comes with the combo?"
                    continue
            if target_item is not None and target_item.item_type == item_type and not explicit_number:
                answering = pending is not None and pending.task == "item" and pending.item_index == target
                if frame.anchor is None:
                    if answering and not self.seg.modify:
                        self._answer(fields)
                    else:
                        self._modify(target, fields)
                    continue
                if answering and pending is not None and pending.field in fields and all(
                    target_item.fields.get(k) in (None, [], v) or k in target_item.defaulted
                    for k, v in fields.items()
                ):
                    self._answer(fields)  # "a sesame bagel" answering "what kind of bagel?"
                    continue
            if not fields and frame.anchor is None:
                continue
            self.out.new_items.append(ParsedItem(item_type=item_type, fields=fields))

    def _bare(self, frame: Frame) -> None:
        """A frame naming no item: "forget the second one" (an ordinal), "make it 3" (a quantity)."""
        tree = self.tree
        if tree is None or frame.attrs:
            return
        live = [i for i, it in enumerate(tree.items.items) if it.status != "skipped"]
        if frame.ordinal is not None:
            n = frame.ordinal
            idx = live[n] if -len(live) <= n < len(live) else None
            if frame.cancel and idx is not None:
                self.out.cancel_item_index = idx
            elif frame.cancel:
                self.out.cancel_item = f"{_ORDINAL_TEXT.get(n, str(n + 1))} item"
            return
        target = _target_item(tree)
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
        for k, v in fields.items():
            self.out.modifications.append(Modification(item_index=idx, field=k, new_value=v))

    def intents(self, text: str, contacts: list[str]) -> None:
        flags, out, tree = self.seg.flags, self.out, self.tree
        pending = tree.pending if tree is not None else None
        # frames that produced nothing (a bare house number, "one") don't make this an order message
        no_frames = not (out.new_items or out.modifications or out.cancel_item_index is not None
                         or any(k != "method" for k in out.answers))
        if flags.get("cancel_all"):
            out.wants_cancel = True
        elif self.seg.cancel_dangling and out.cancel_item_index is None:
            out.cancel_item_index = _target_item(tree)  # "forget it", "cancel that"
        if flags.get("pickup"):
            out.order_type = "pickup"
        if flags.get("delivery"):
            out.order_type = "delivery"
        m = _ADDRESS_RE.search(text)
        if m:
            out.address, out.order_type = m.group(1).strip(" .!"), "delivery"
        if flags.get("checkout"):
            out.wants_checkout = True
        if flags.get("pay"):
            method = flags["pay"]
            if (method == "cash_delivery" and tree is not None and tree.delivery_method.order_type == "pickup"
                    and "deliver" not in text.lower()):
                method = "in_store"  # "cash" on a pickup order: paid at the counter
            out.answers["method"] = method
        if contacts:
            out.customer_contact = contacts[0]
        m = _NAME_RE.search(text)
        if m:
            out.customer_name = m.group(1).strip().title()
        if pending is None:
            return
        said_yes = bool(flags.get("yes"))
        said_no = bool(flags.get("no_answer")) or (self.seg.bare_negation and no_frames)
        if pending.task == "item" and pending.field and pending.field not in out.answers:
            item = tree.items.items[pending.item_index or 0] if tree is not None else None
            fdef = self.menu.item_types[item.item_type].fields.get(pending.field) if item else None
            if fdef is not None and fdef.kind == "bool" and (said_yes or said_no) and no_frames:
                out.answers[pending.field] = said_yes and not said_no
            elif pending.optional and said_no:
                out.answers[pending.field] = None
        elif pending.task == "checkout" and said_yes and not said_no:
            out.wants_checkout = True
        elif pending.task == "address" and no_frames and not out.address and not said_no:
            cleaned = re.sub(r"^\s*(?:it'?s|deliver(?: it)? to|to|at)\s+", "", text, flags=re.IGNORECASE)
            cleaned = cleaned.strip(" .!")
            if cleaned and _STREET_RE.search(cleaned):  # "yes", "sure" are not a street
                self.free_text = True
                out.address = cleaned
                out.order_type = out.order_type or "delivery"
            elif cleaned:
                self.leftovers.append(cleaned)
        elif pending.task == "customer_name" and no_frames and not out.customer_name:
            name = self._name(text)
            if name:
                out.customer_name = name
                self.free_text = True
            elif text.strip(" .!"):
                self.leftovers.append(text.strip(" .!"))  # "no thanks", "I'd rather not say": asked again

    def _name(self, text: str) -> str | None:
        """A free-text answer to "can I get a name?": not yes/no, not a refusal, not grammar words only."""
        kinds = {c.kind for c in self.chunks}
        name = _NAME_PREFIX_RE.sub("", text).strip(" .!")
        if not name or len(name.split()) > 4 or re.search(r"\d", name) or kinds & _REFUSAL:
            return None
        if kinds <= _GLUE and not (len(name.split()) == 1 and name[0].isupper()):
            return None  # "that one", "me" - but "Will" (capitalised) may be a name
        return name.title()


def parse_deterministic(text: str, menu: Menu, tree: OrderTask | None = None) -> ParsedInput:
    """Parse one customer message against ``menu``; ``tree`` gives answers/modifications their target."""
    lex = get_lexicon(menu)
    clean, contacts = extract_contacts(text)
    chunks = lex.chunk(tokenize(clean))
    seg = segment(chunks, menu)
    builder = _Builder(menu, tree, seg, chunks)
    builder.frames()
    builder.intents(text, contacts)
    out = builder.out
    out.unparsed = [] if builder.free_text else _spans(chunks) + builder.leftovers
    if out.is_empty() and not out.unparsed and _has_content(chunks, seg):
        out.unparsed = [text.strip(" .!?")]  # "make it 0" with nothing to act on: said, not understood
    unresolved = sum(len(s.split()) for s in out.unparsed)
    confidence = 1.0 - unresolved / max(seg.content, 1)
    if out.is_empty():
        confidence = min(confidence, 0.0 if unresolved or not seg.content else 0.5)
    out.confidence = round(max(0.0, min(1.0, confidence)), 3)
    return out


def _has_content(chunks: list[Any], seg: Segmentation) -> bool:
    glue = _GLUE | {"neg"} if seg.bare_negation else _GLUE
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
