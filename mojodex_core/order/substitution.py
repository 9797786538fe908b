"""A whole message swapping one value of an ordered line for another: "change the pepperoni to sausage",
"replace pickles with onions", "swap the coke for a sprite please".

Read only in its narrowest shape - [please] VERB [the] X LINK [a|an|the] Y [please|thanks|thank you], the words
being ``grammar_words.SUBSTITUTION_*`` - and only when:

* X is a value held on exactly one live line, without an amount ("extra pepperoni": which amount Y gets is not
  guessed), in a choice field (a list such as toppings, or a single choice such as size, spread, drink);
* Y is a value of that same field of that line's item, in stock, and not on that line yet.

Y is resolved as said on that line's item (``resolve.resolve_frame``). In a list X is taken off and Y added, X
not excluded ("change the cheese to ham" on a cheese pizza is "small pizza with ham", not "with ham and no cheese":
unlike "ham instead of cheese", the swap says what the pizza gets, not what it must not have); a single choice is set
to Y, which replaces X ("change the butter to jam" is jam, not jam and no butter).

The same swap said again is already made: X on no line and Y held on exactly one line, in the field X would be in.
It changes nothing (the field set to what it holds) rather than being read by the frame grammar, which put X back or
added a line. Anything else (a negation, "too", a second clause or item, a number or an amount, "it", X on two lines,
X on no line and Y on none or on two, Y already on X's line, a question) is not this shape: ``substitution``
returns None and the frame grammar reads the message as before.
"""

from __future__ import annotations

from typing import Any

from .frame_parts import Attr, Frame
from .grammar_words import SUBSTITUTION_ARTICLES, SUBSTITUTION_LINKS, SUBSTITUTION_POLITE, SUBSTITUTION_VERBS
from .lexicon import Chunk
from .menu import Menu, entry_name
from .parsed_input import Modification
from .resolve import resolve_frame
from .tree import OrderTask

__all__ = ["substitution"]


def substitution(text: str, chunks: list[Chunk], menu: Menu, tree: OrderTask | None) -> list[Modification] | None:
    """The modifications of a message that is exactly "change X to Y" (see the module docstring), else None."""
    said = _shape(chunks)
    if tree is None or said is None or "?" in text:
        return None
    x, y = said
    held = [(i, item, s) for i, item in tree.items.active() for s in x.senses
            if s.field is not None and s.item_type == item.item_type
            and _entry(item.fields.get(s.field), s.value) is not None]
    if not held:  # said again once done ("change the butter to jam" twice): nothing to change
        return _done_already(x, y, tree, menu)
    if len(held) != 1:  # on two lines: which one? Not guessed
        return None
    idx, item, xs = held[0]
    fdef = menu.item_types[item.item_type].fields[xs.field]
    entry = _entry(item.fields.get(xs.field), xs.value)
    # a list is emptied and set again (below): one that may not be emptied is not swapped this way
    if fdef.kind != "choice" or (fdef.multi and fdef.required) or isinstance(entry, dict) and entry.get(
            "quantity"):
        return None
    ys = [s for s in y.senses if s.item_type == item.item_type and s.field == xs.field]
    if len(ys) != 1 or ys[0].value == xs.value or any(
            s.field is not None and s.item_type == item.item_type and _entry(item.fields.get(s.field), s.value)
            is not None for s in y.senses):
        return None
    value = fdef.value(str(ys[0].value)) if fdef.values else None
    if value is None or not value.in_stock:
        return None
    swap = Frame(anchor=item.item_type, attrs=[Attr((ys[0],), False, None, y.text)])
    _type, fields, left = resolve_frame(swap, menu)
    if left or not fields:
        return None
    mods = [Modification(item_index=idx, field=k, new_value=v) for k, v in fields.items()]
    if fdef.multi and isinstance(fields.get(xs.field), list):
        # a list value is appended and an exclusion stays in the read-back ("with ham and no cheese"): the list is
        # emptied and set again without X, so X is off the line but not excluded ("small pizza with ham")
        kept = [e for e in item.fields.get(xs.field) or [] if entry_name(e) != xs.value]
        mods = [Modification(item_index=idx, field=xs.field, new_value=None)] + [
            m.model_copy(update={"new_value": kept + m.new_value}) if m.field == xs.field else m for m in mods]
    return mods


def _done_already(x: Chunk, y: Chunk, tree: OrderTask, menu: Menu) -> list[Modification] | None:
    """X on no line and Y held on exactly one line, in the field X would be in (the same item type and field as one
    of X's senses): the swap is already made. The field set to what it holds: a no-op the conversation takes as
    understood (not the frame grammar's reading, which put X back or added a line), else None."""
    fields = {(s.item_type, s.field) for s in x.senses if s.field is not None}
    held = {(i, ys.field) for i, item in tree.items.active() for ys in y.senses
            if (item.item_type, ys.field) in fields and ys.item_type == item.item_type
            and _entry(item.fields.get(ys.field), ys.value) is not None}
    if len(held) != 1:
        return None
    idx, name = next(iter(held))
    item = tree.items.items[idx]
    fdef = menu.item_types[item.item_type].fields[name]
    if fdef.kind != "choice":
        return None
    return [Modification(item_index=idx, field=name, new_value=item.fields.get(name))]


def _shape(chunks: list[Chunk]) -> tuple[Chunk, Chunk] | None:
    """X and Y of [please] VERB [the] X LINK [a|an|the] Y [please|thanks|thank you], else None."""
    verb = next((i for i, c in enumerate(chunks) if c.kind != "menu" and c.text.lower() in SUBSTITUTION_VERBS), None)
    if verb is None or not _polite(chunks[:verb]):
        return None
    rest = chunks[verb + 1:]
    if rest and rest[0].kind == "def" and rest[0].text.lower() == "the":
        rest = rest[1:]
    if len(rest) < 3 or not _value(rest[0]):
        return None
    x, link = rest[0], rest[1]
    if link.kind not in ("filler", "with") or link.text.lower() not in SUBSTITUTION_LINKS:
        return None
    rest = rest[2:]
    if rest and rest[0].kind in ("num", "def") and rest[0].text.lower() in SUBSTITUTION_ARTICLES:
        rest = rest[1:]
    if not rest or not _value(rest[0]) or not _polite(rest[1:]):
        return None
    return x, rest[0]


def _value(chunk: Chunk) -> bool:
    return chunk.kind == "menu" and not chunk.fuzzy  # a misspelling's guess is not acted on by this shortcut


def _polite(chunks: list[Chunk]) -> bool:
    """Only "please", "thanks", "thank you" and punctuation."""
    if any(c.kind not in ("filler", "boundary") for c in chunks):
        return False
    said = " ".join(c.text.lower() for c in chunks if c.kind == "filler" and c.text != ",")
    while said:
        word = next((p for p in SUBSTITUTION_POLITE if said == p or said.startswith(p + " ")), None)
        if word is None:
            return False
        said = said[len(word):].lstrip()
    return True


def _entry(held: Any, value: Any) -> Any:
    """The entry of a field's value (a list's entry, or the single choice) that is ``value``, else None."""
    for entry in held if isinstance(held, list) else [held]:
        if entry is not None and entry_name(entry) == value:
            return entry
    return None
