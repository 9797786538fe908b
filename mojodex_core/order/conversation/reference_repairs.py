"""Changes by reference in the conversation, and the answer to "which one do you mean?".

* several removals in one message ("remove the pizza and the coke"): the parse holds one removal, the others
  become extra cancellations (``cancels``);
* a change by reference to no item, or to one of several (the parser's ``ParsedInput.reference``): nothing is
  applied, the turn is unclear (``lowConfidence`` -> Clarifying, "which one do you mean?") and the change is kept
  for the answer, which the parser's ``referenced_item`` reads ("the coke", "the second one"), a number in the
  list, or "both" (every line it could be);
* values no item ordered takes ("honey" after a bagel: ``reference.new_item``) are kept to be offered as a new
  item; a field cleared that no line has anything in ("no spread" after a latte: ``reference.nothing_held``) is
  kept to be said back.

Part of the conversation's repair (:mod:`.repair`), which applies them in its order.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from ..menu import entry_name
from ..parsed_input import Modification, ParsedInput
from ..parser import parse_deterministic, referenced_item
from .menu_index import mentions, menu_phrases
from .resources import has_phrase, normalise
from .views import uses

if TYPE_CHECKING:
    from .context import Ctx


_CLAUSE = re.compile(r"[.!?;]")
_KEEP_WORDS = (" just ", " only ", " but ", " keep ", " add ", " and add ", " juste ", " seulement ", " mais ",
               " ajoutez ")


def _split_removal(ctx: Ctx) -> tuple[str, str]:
    """(the words that remove something, the rest): "forget the bagel. Just the latte" -> ("forget the bagel",
    "Just the latte")."""
    removal, rest = [], []
    for clause in _CLAUSE.split(ctx.text or ""):
        norm = " , ".join(normalise(piece) for piece in clause.split(","))  # commas kept: they separate a list
        if has_phrase(norm, ctx.kw.get("remove", ())):
            padded = f" {norm} "
            cut = min((padded.find(w) for w in _KEEP_WORDS if w in padded), default=len(padded))
            removal.append(padded[:cut])
            rest.append(padded[cut:])
        else:
            rest.append(clause)
    return " ".join(removal), " ".join(r for r in rest if r.strip())


def _references(ctx: Ctx, text: str) -> tuple[list[int], bool, list[int]]:
    """Live items ``text`` refers to, whether a reference resolved to nothing or to several items, and those
    several (the candidates "which one?" lists). One reference per part of the list ("the first one, the latte
    and the mocha"): the words of a part describe one item together ("the first pizza", "the small pepperoni
    pizza"), they are not one reference each."""
    refs: list[int] = []
    candidates: list[int] = []
    unresolved = False
    parts = _list_parts(ctx, text)
    for part in parts:
        idx, doubt, fit = _part_reference(ctx, part)
        if idx is not None and idx not in refs:
            refs.append(idx)
        candidates += [i for i in fit if i not in candidates]
        # a reference several items fit ("remove the coke" with two cokes): which one? asked, not guessed
        unresolved = unresolved or doubt is True or doubt is None
    return refs, unresolved, candidates


def _list_parts(ctx: Ctx, text: str) -> list[str]:
    """ "the bagel, the latte and the mocha" -> its parts, at commas and the keyword lists' list words; not
    within a menu name that has one ("the coffee with half and half", "mac and cheese")."""
    words = [normalise(w) for w in ctx.kw.get("list_joins", ())]
    parts = [normalise(p) for p in text.split(",")]
    if not words:
        return [p for p in parts if p.strip()]
    joins = "|".join(re.escape(w) for w in words)
    kept = [n for n in menu_phrases(ctx.menu) if re.search(rf"\b(?:{joins})\b", n)]
    out = []
    for part in parts:
        for name in kept:  # its spaces made word characters for the split ("_": normalised text has none)
            part = re.sub(rf"\b{re.escape(name)}\b", name.replace(" ", "_"), part)
        out += [q.replace("_", " ") for q in re.split(rf"\b(?:{joins})\b", part)]
    return [p for p in out if p.strip()]


def _part_reference(ctx: Ctx, part: str) -> tuple[int | None, bool | None, list[int]]:
    """The live item one part names (an ordinal, over the items of the type named if any; item names and values
    the item holds), whether it named something no item is (True) or several are (None), and those several."""
    tree = ctx.conv.order
    live = [i for i, _ in tree.items.active()]
    found = mentions(part, ctx.menu)
    nouns = {m.item_type for m in found if m.field is None}
    naming = {m.item_type for m in found if m.field is not None and m.value is not None
              and ctx.menu.item_types[m.item_type].fields[m.field].names_item}
    types = nouns or naming or {m.item_type for m in found}
    values = [m for m in found if m.field is not None and m.value is not None and m.item_type in types]
    words = part.split()
    ordinal = next((ctx.kw.get("ordinals", {}).get(w) for pos, w in enumerate(words)
                    if w in ctx.kw.get("ordinals", {}) and (pos + 1 < len(words) or w == "last")), None)
    if ordinal is None and not found:
        return None, False, []
    if ordinal is None and not nouns and not naming and all(
            m.field is not None and ctx.menu.item_types[m.item_type].fields[m.field].with_list for m in found):
        return None, False, []  # "remove the ham": an add-on taken off (the parser's), not an item named by it
    typed = [i for i in live if not types or tree.items.items[i].item_type in types]
    if ordinal is not None:
        k = ordinal - 1 if ordinal > 0 else len(typed) - 1
        return (typed[k], False, []) if 0 <= k < len(typed) else (None, True, [])
    held = [i for i in typed if all(uses(tree.items.items[i].fields, m.field, m.value) for m in values
                                    if m.item_type == tree.items.items[i].item_type and m.field is not None)]
    if not held and len(values) == 1 and values[0].field is not None and values[0].value is not None:
        held = _named_within(ctx, live, values[0].item_type, values[0].field, values[0].value)
    if len(held) == 1:
        return held[0], False, []
    return None, (None if held else True), held


def _named_within(ctx: Ctx, live: list[int], item_type: str, field: str, value: str) -> list[int]:
    """The one live item whose value's name contains the said one's ("the coke" for the only diet coke); none
    when several do (then "which one?")."""
    fdef = ctx.menu.item_types[item_type].fields[field]
    said = fdef.value(value)
    if said is None:
        return []
    words = f" {normalise(said.display)} "
    found = []
    for i in live:
        item = ctx.conv.order.items.items[i]
        current = item.fields.get(field)
        for entry in current if isinstance(current, list) else [current]:
            vdef = fdef.value(entry_name(entry)) if entry else None
            names = [vdef.display, *vdef.synonyms] if vdef is not None else []
            if item.item_type == item_type and any(words in f" {normalise(n)} " for n in names):
                found.append(i)
                break
    return found if len(found) == 1 else []


def removals(ctx: Ctx, parsed: ParsedInput) -> tuple[ParsedInput, list[int], bool, list[int]] | None:
    """Several removals in one message (the parse holds one): (parse of the rest, items to remove, unclear, the
    items an unclear reference could mean)."""
    if not ctx.has("remove") or parsed.wants_cancel:
        return None
    tree = ctx.conv.order
    removal, rest = _split_removal(ctx)
    said = normalise(removal)
    everything = has_phrase(said, ctx.kw.get("everything", ()))
    # "remove all of them" is the whole order; "remove the bacon from all of them" names what to take off
    if everything and not mentions(f" {said} ".replace(f" {everything} ", " "), ctx.menu) and tree.items.active():
        ctx.rule("repair", "remove everything")
        return ParsedInput(wants_cancel=True), [], False, []
    refs, unresolved, candidates = _references(ctx, removal)
    if len(refs) < 2 and not unresolved:
        return None
    ctx.rule("repair", f"remove items {[r + 1 for r in refs]}" + (" (a reference is unresolved)" if unresolved
                                                                  else ""))
    base = parse_deterministic(rest, ctx.menu, tree) if rest.strip() else ParsedInput()
    return base, refs, unresolved, candidates


def reference_doubt(ctx: Ctx, parsed: ParsedInput) -> bool:
    """The parser met a change by reference to no item ("make the fourth one small"): nothing is applied for it,
    the change is kept for the answer to "which one do you mean?"."""
    doubt = parsed.reference
    if doubt is None:
        return False
    if doubt.nothing_held:  # "no spread" after a latte: nothing to take it from - said, no bagel offered for it
        ctx.rule("repair", f"{doubt.said!r}: no item of the order has any to take off")
        ctx.pending_reference = {"kind": "nothing", "said": doubt.said}
        return True
    if doubt.new_item:  # "honey" after a bagel: no item ordered takes it - offered as a new item, not guessed
        ctx.rule("repair", f"{doubt.said!r} goes with no item of the order: offer it as a new item")
        ctx.pending_reference = {"kind": "new", "said": doubt.said, "fields": doubt.fields}
        return True
    ctx.rule("repair", f"{doubt.said!r} refers to no single item of the order: ask which one")
    # the lines it could be ("remove the bacon" with two bagels holding it) are the ones "which one?" lists
    ctx.pending_reference = {"kind": "reference", "fields": doubt.fields, "candidates": list(doubt.items)}
    return True


def _modifications(ctx: Ctx, idx: int, per_type: dict[str, dict[str, Any]]) -> list[Modification]:
    """The values asked for that fit the item, as modifications."""
    item = ctx.conv.order.items.items[idx]
    return [Modification(item_index=idx, field=name, new_value=value)
            for name, value in per_type.get(item.item_type, {}).items()]


def _number_in_the_list(ctx: Ctx, proposal: dict) -> tuple[list[int], int | None]:
    """The items "which one?" listed (the candidates, else the whole order) and the number the answer gives in
    that list ("2", "the second one" - an ordinal counts in the list when candidates were listed), if any."""
    live = [i for i, _ in ctx.conv.order.items.active()]
    listed = [i for i in proposal.get("candidates", ()) if i in live]
    live = listed or live
    words = ctx.norm.split()
    if len(words) > 3:
        return live, None
    number = next((int(w) for w in words if w.isdigit()), None)
    ordinals = ctx.kw.get("ordinals", {})
    if number is None and listed:  # "the second one" of the candidates listed, not of the order
        number = next((ordinals[w] if ordinals[w] > 0 else len(live) for w in words if w in ordinals), None)
    return live, number


def not_in_the_list(ctx: Ctx) -> bool:
    """The answer to "which one?" is a number the list does not have ("3" or "the third one" with two pizzas
    listed): nothing is applied and the question is asked again, with the same list and the change kept."""
    proposal = ctx.conv.proposal
    if proposal is None or proposal.get("kind") not in ("reference", "remove"):
        return False
    live, number = _number_in_the_list(ctx, proposal)
    if number is None or 1 <= number <= len(live):
        return False
    ctx.rule("repair", f"which one: {number} is not in the list of {len(live)}: asked again")
    ctx.pending_reference = proposal
    return True


def which_one(ctx: Ctx) -> ParsedInput | None:
    """The answer to "which one do you mean?": the change asked before, applied to the item named now
    ("the coke" - read by the parser -, "2" or "the second one": the number in the question's list, which is the
    items the reference could mean when it named some, else the whole order)."""
    proposal = ctx.conv.proposal
    if proposal is None or proposal.get("kind") not in ("reference", "remove"):
        return None
    tree = ctx.conv.order
    live, number = _number_in_the_list(ctx, proposal)
    candidates = [i for i, _ in tree.items.active() if i in (proposal.get("candidates") or ())]
    if proposal["kind"] == "reference" and len(candidates) >= 2 and ctx.has("both") and ctx.only("both", "yes"):
        # "both" to "which one?" ("remove the bacon" with two bagels holding it): every line it could be
        mods = [m for i in candidates for m in _modifications(ctx, i, proposal.get("fields", {}))]
        ctx.rule("repair", f"which one: all of items {[i + 1 for i in candidates]} get the change")
        return ParsedInput(modifications=mods, confidence=1.0) if mods else None
    if number is not None and 1 <= number <= len(live):
        idx: int | None = live[number - 1]
    elif len(live) == 1 and proposal.get("candidates") and ctx.only("yes"):
        idx = live[0]  # "did you mean your large pizza?" - "yes"
    else:
        idx = referenced_item(ctx.text or "", ctx.menu, tree)
    if idx is None:
        return None
    if proposal["kind"] == "remove":
        ctx.rule("repair", f"which one: item {idx + 1} is removed")
        return ParsedInput(cancel_item_index=idx, confidence=1.0)
    mods = _modifications(ctx, idx, proposal.get("fields", {}))
    if not mods:
        return None
    ctx.rule("repair", f"which one: item {idx + 1} gets {[m.field for m in mods]}")
    return ParsedInput(modifications=mods, confidence=1.0)
