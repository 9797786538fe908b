"""Order-level intents of one message, read after its item frames: cancel, pickup/delivery, address,
checkout, payment, contact, name, and the short answers to the pending question ("yes", "no thanks",
a name, a street). Part of the deterministic parser (:mod:`parser`)."""

from __future__ import annotations

import re
from typing import Any

from . import grammar_words as gw
from .references import current_item
from .tokens import tokenize

_NAME_RE = re.compile(r"\b(?:my name is|my name's|name is|name's|call me|under the name(?: of)?)\s+"
                      r"([a-z][a-z'\-]*(?:\s+[a-z][a-z'\-]*)?)", re.IGNORECASE)
_NAME_PREFIX_RE = re.compile(r"^\s*(?:it'?s|it is|this is|i'?m|i am|for|under|name'?s|my name is|"
                             r"the name is|put it under)\s+", re.IGNORECASE)
_STREET_RE = re.compile(r"\d|\b(?:street|st|avenue|ave|road|rd|boulevard|blvd|lane|ln|drive|dr|way|court|ct|"
                        r"place|pl|highway|hwy|parkway|pkwy|terrace|circle|square|sq|alley|row|apt|apartment|"
                        r"suite|unit|floor|building|plaza|close|crescent|mews)\b\.?", re.IGNORECASE)
# chunk kinds that carry no content of their own: a message made only of these says nothing to act on
GLUE = frozenset({"filler", "boundary", "yes", "no_answer", "def", "and", "or", "but", "wait"})
_REFUSAL = frozenset({"yes", "no_answer", "neg", "cancel", "cancel_all", "modify", "checkout"})
# an answer to another question, not a name: "pickup" answering "can I get a name?"
_NOT_A_NAME = _REFUSAL | {"pickup", "delivery", "pay"}
# an address said in a sentence: "deliver to 9 Pine Street", "change the address to 9 Pine Street"
_ADDRESS_RE = re.compile(r"\b(?:(?:deliver(?:ed)?(?: it)?|bring it|send it|delivery)\s+(?:to|at)"
                         r"|(?:(?:the|my|our|new|delivery)\s+)*address\s+(?:to|is|should be|will be|as|at)"
                         r"|(?:the|my|our|new|delivery)\s+address(?=\s*:?\s*\d))\s*:?\s+(.+)$", re.IGNORECASE)
_ADDRESS_END_RE = re.compile(r"\s*,\s*and\b|\s+and\s+(?:add|also|give|get|i|i'll|i'd|a|an|\d)\b", re.IGNORECASE)
_TAIL_WORDS = "|".join(map(re.escape, gw.ADDRESS_TAIL))
_ADDRESS_TAIL_RE = re.compile(rf"(?:[\s,.!]+(?:{_TAIL_WORDS}))+[\s.!]*$", re.IGNORECASE)


def address_said(text: str) -> tuple[str | None, str]:
    """The address said in a sentence ("deliver to 9 Pine Street instead") and the text without that part, so
    that its words are not read as an order (the house number is no quantity); words after it that are not
    part of it (``grammar_words.ADDRESS_TAIL``) stay in the text."""
    m = _ADDRESS_RE.search(text)
    if m is None or text.rstrip().endswith("?"):  # "what's the address?": asked, not given
        return None, text
    address = m.group(1)
    more = _ADDRESS_END_RE.search(address)  # "9 Pine Street, and add 2 cokes": the order goes on after it
    after = address[more.start():] if more is not None else ""
    address = address[: more.start()] if more is not None else address
    tail = _ADDRESS_TAIL_RE.search(address)
    rest = address[tail.start():] if tail else ""
    address = address[: tail.start()] if tail else address
    address = address.strip(" .!,")
    if not address:
        return None, text
    return address, text[: m.start()] + " " + rest + after


def name_said(text: str, lex: Any) -> tuple[str | None, str]:
    """The name said with "my name is ..." and the text without it: the name's words are not menu words ("my
    name is Olive": no olives). A second word the menu or the grammar knows is not part of the name."""
    m = _NAME_RE.search(text)
    if m is None:
        return None, text
    words = m.group(1).split()
    end = m.end()
    if len(words) == 2 and any(c.kind != "unknown" for c in lex.chunk(tokenize(words[1]))):
        end = m.start(1) + len(words[0])
    return text[m.start(1):end].strip().title(), text[:m.start()] + " " + text[end:]


def answers_the_name(chunks: list[Any], tree: Any, menu: Any) -> bool:
    """The name is asked and the message is one word, an add-on's value that names no item, with no article,
    number or grammar word ("Olive", "Basil"): a name, not a topping for the current item. A size or a style
    ("large", "thin crust") is still read as an order."""
    pending = tree.pending if tree is not None else None
    if pending is None or pending.task != "customer_name":
        return False
    words = [c for c in chunks if c.kind != "boundary"]
    if len(words) != 1 or words[0].kind != "menu" or len(words[0].text.split()) != 1:
        return False
    return all(s.field is not None and not s.names_item and menu.item_types[s.item_type].fields[s.field].with_list
               for s in words[0].senses)


def read_intents(b: Any, text: str, contacts: list[str], name: str | None = None, address: str | None = None
                 ) -> None:
    """Fill the order-level fields of ``b.out`` (``b``: the parser's frame builder)."""
    flags, out, tree = b.seg.flags, b.out, b.tree
    pending = tree.pending if tree is not None else None
    # frames that produced nothing (a bare house number, "one") don't make this an order message
    no_frames = not (out.new_items or out.modifications or out.cancel_item_index is not None
                     or any(k != "method" for k in out.answers))
    if flags.get("cancel_all"):
        out.wants_cancel = True
    elif b.seg.cancel_dangling and out.cancel_item_index is None:
        out.cancel_item_index = current_item(tree)  # "forget it", "cancel that"
    if flags.get("pickup"):
        out.order_type = "pickup"
    if flags.get("delivery"):
        out.order_type = "delivery"
    if address:
        out.address, out.order_type = address, "delivery"
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
    if name:
        out.customer_name = name
    if pending is None:
        return
    said_yes = bool(flags.get("yes"))
    said_no = bool(flags.get("no_answer")) or (b.seg.bare_negation and no_frames)
    if pending.task == "item" and pending.field and pending.field not in out.answers:
        item = tree.items.items[pending.item_index or 0] if tree is not None else None
        fdef = b.menu.item_types[item.item_type].fields.get(pending.field) if item else None
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
            b.free_text = True
            out.address = cleaned
            out.order_type = out.order_type or "delivery"
        elif cleaned:
            b.leftovers.append(cleaned)
    elif pending.task == "customer_name" and no_frames and not out.customer_name:
        name = _name(b.chunks, text)
        if name:
            out.customer_name = name
            b.free_text = True
        elif out.order_type or out.answers.get("method") or out.wants_checkout:
            pass  # "pickup" answering "can I get a name?": that answer, not a name
        elif text.strip(" .!"):
            b.leftovers.append(text.strip(" .!"))  # "no thanks", "I'd rather not say": asked again


def _name(chunks: list[Any], text: str) -> str | None:
    """A free-text answer to "can I get a name?": not yes/no, not a refusal, not grammar words only."""
    kinds = {c.kind for c in chunks}
    name = _NAME_PREFIX_RE.sub("", text).strip(" .!")
    if not name or len(name.split()) > 4 or re.search(r"\d", name) or kinds & _NOT_A_NAME:
        return None
    if kinds <= GLUE and not (len(name.split()) == 1 and name[0].isupper()):
        return None  # "that one", "me" - but "Will" (capitalised) may be a name
    return name.title()
