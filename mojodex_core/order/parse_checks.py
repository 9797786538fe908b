"""Checks of a finished parse against what was said: structural doubts no single frame can see.

Each returns the words to report in ``ParsedInput.unparsed`` (which lowers confidence), so that the
platform asks instead of silently taking a parse that dropped or guessed part of the message.
"""

from __future__ import annotations

from typing import Any

from .frame_parts import Frame
from .menu import Menu
from .parsed_input import ParsedInput


def _negative(field: str, value: Any) -> bool:
    return field.startswith("excluded_") or value is False or value is None


def says_no(out: ParsedInput) -> bool:
    """The parse holds something negative: an exclusion, a false flag, a removal or a declined question."""
    if out.cancel_item_index is not None or out.cancel_item or out.wants_cancel:
        return True
    if any(_negative(k, v) for item in out.new_items for k, v in item.fields.items()):
        return True
    if any(_negative(m.field, m.new_value) for m in out.modifications):
        return True
    return any(_negative(k, v) for k, v in out.answers.items())


def unused_negations(chunks: list[Any], out: ParsedInput) -> list[str]:
    """ "a combo with no fries", "actually no cream cheese" that changed nothing: a negation of something
    said (not a bare "no" answering a question) that left no trace in the parse. "instead of" replaces
    rather than negates; "actually no" is a correction unless a value follows it straight away; a negated
    item noun counts only inside an item's "with" list. A negated word the menu doesn't know ("no ice" at the
    pizzeria) is reported by itself already: said back once ("ice"), not twice ("ice no ice")."""
    if says_no(out):
        return []
    for i, ch in enumerate(chunks[:-1]):
        nxt = chunks[i + 1]
        words = ch.text.lower().split()
        negates = ch.kind == "neg" and words[0] != "instead" or ch.kind == "wait" and words[-1] == "no"
        if negates and nxt.kind == "menu" and (not _names_an_item(nxt) or _after_with(chunks, i)):
            return [f"{ch.text} {nxt.text}"]
    return []


def _names_an_item(ch: Any) -> bool:
    return bool(ch.senses) and all(s.field is None for s in ch.senses)


def _after_with(chunks: list[Any], i: int) -> bool:
    """ "a combo with no drink": the negated item is part of the one being described; "and I won't need
    drinks" says there is nothing more to order, which the parse rightly leaves out."""
    before = next((c for c in reversed(chunks[:i]) if c.kind != "filler"), None)
    return before is not None and before.kind == "with"


def item_named_by_a_part(frame: Frame, menu: Menu, item_type: str) -> bool:
    """ "a hamburger" at the pizzeria (hamburger meat is a topping there), "a bacon" at the drive-thru: an
    article straight before a value of a "with" list, with no item noun, names something the menu may not
    sell - or a pizza by its topping. Not guessed. ("a large pepperoni": a size first, a pizza.)"""
    if not frame.article or frame.has_noun or frame.anchor is not None or not frame.attrs:
        return False
    first = next((s for s in frame.attrs[0].senses if s.item_type == item_type and s.field), None)
    if first is None:
        return False
    fdef = menu.item_types[item_type].fields[first.field]
    return fdef.multi and fdef.with_list
