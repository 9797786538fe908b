"""Conversation repair on top of the parser's output.

The parser reads one message against the menu; some things only make sense against the conversation:

* bare yes/no (in any language of the keyword files) answering a yes/no item question or declining an
  optional one;
* "same again" / "another one": the last mentioned item again;
* a value said with another item's words at a pending question ("What size?" - "add a small coke"): an order;
* several removals in one message ("remove the pizza and the coke"): the parse holds one removal, the others
  become extra cancellations (``cancels``);
* a change by reference to no item, or to one of several (the parser's ``ParsedInput.reference``): nothing is
  applied, the turn is unclear (``lowConfidence`` -> Clarifying, "which one do you mean?") and the change is kept
  for the answer, which the parser's ``referenced_item`` reads ("the coke", "the second one"), a number in the
  list, or "both" (every line it could be);
* values no item ordered takes ("honey" after a bagel: ``reference.new_item``): nothing is applied, the item that
  takes them is offered ("would you like a coffee with honey?") and yes, or naming it, adds it; a field cleared that
  no line has anything in ("no spread" after a latte: ``reference.nothing_held``) is said back, never offered.

Changes by ordinal or by type ("make the second one large", "make the coke large") and "both large" over the
order are the parser's: the conversation applies them as parsed.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from ..menu import entry_name
from ..parsed_input import Modification, ParsedInput, ParsedItem
from ..parser import parse_deterministic, referenced_item
from ..tree import OrderTask, PendingQuestion
from .menu_index import Mention, mentions, menu_phrases
from .offers import lines_still_without
from .resources import has_phrase, normalise, only_phrases

if TYPE_CHECKING:
    from .context import Ctx


def _pending_item(tree: OrderTask) -> tuple[int, str, bool] | None:
    p = tree.pending
    if p is None or p.task != "item" or p.item_index is None or not p.field:
        return None
    return p.item_index, p.field, p.optional


def _yes_no(ctx: Ctx, parsed: ParsedInput) -> ParsedInput | None:
    pend = _pending_item(ctx.conv.order)
    if pend is None or not parsed.is_empty():
        return None
    idx, field, optional = pend
    item = ctx.conv.order.items.items[idx]
    fdef = ctx.menu.item_types[item.item_type].fields[field]
    if ctx.only("yes") and fdef.kind == "bool":
        ctx.rule("repair", f"yes answers {field} of item {idx + 1}")
        return ParsedInput(answers={field: True})
    if ctx.only("no") and fdef.kind == "bool":
        ctx.rule("repair", f"no answers {field} of item {idx + 1}")
        return ParsedInput(answers={field: False})
    if ctx.only("no") and optional:
        ctx.rule("repair", f"no declines the optional {field} of item {idx + 1}")
        return ParsedInput(answers={field: None})
    return None


def _hesitation(ctx: Ctx, parsed: ParsedInput) -> ParsedInput | None:
    """ "hmm", "umm", "errr": nothing to apply and nothing to say back (not an unknown word, not a name) - the
    question is asked again (an unclear answer: the clarify escalation)."""
    if not ctx.hesitates():
        return None
    ctx.rule("repair", "a hesitation: nothing to apply, the question is asked again")
    return ParsedInput(confidence=0.0)


def _greeting_only(ctx: Ctx, parsed: ParsedInput) -> ParsedInput | None:
    """A greeting of the keyword lists ("bonjour", "salut") and nothing else is a greeting: not an unknown word,
    nor a fuzzy menu match ("salut" -> salt bagel) the parser is unsure of."""
    if not ctx.only("greeting") or (not parsed.is_empty() and parsed.confidence >= 1.0):
        return None
    ctx.rule("repair", "a greeting only: nothing to parse")
    return ParsedInput()


def _info_keywords(ctx: Ctx, parsed: ParsedInput) -> ParsedInput | None:
    """Pickup/delivery and payment answers in the keyword lists' words ("à emporter", "par carte"), when the
    parse found nothing. Pickup or delivery is taken whatever was asked, as the parser takes "pickup": else
    "à emporter" said early would be an unknown menu item."""
    pending = ctx.conv.order.pending
    if not parsed.is_empty():
        return None
    for kind in ("pickup", "delivery"):
        if ctx.only(kind):
            ctx.rule("repair", f"keywords answer order_type {kind}")
            return ParsedInput(order_type=kind)  # type: ignore[arg-type]
    if pending is None:
        return None
    if pending.task == "payment":
        for method in ("in_store", "cash_delivery", "card_link"):
            if ctx.only(f"payment_{method}"):
                if method == "cash_delivery" and ctx.conv.order.delivery_method.order_type == "pickup":
                    method = "in_store"
                ctx.rule("repair", f"keywords answer payment {method}")
                return ParsedInput(answers={"method": method})
    return None


def _said_fields(item: Any) -> dict[str, Any]:
    return {k: v for k, v in item.fields.items() if k not in item.defaulted and v not in (None, [], "")}


def _same_again(ctx: Ctx, parsed: ParsedInput) -> ParsedInput | None:
    """The parser flags "same again" (``repeat_last``) without building the line; the keyword lists add other
    languages and "another one"."""
    if parsed.new_items or parsed.modifications or not (parsed.repeat_last or ctx.has("same_again")):
        return None
    tree = ctx.conv.order
    idx = ctx.conv.last_mentioned_item
    if idx is None or not 0 <= idx < len(tree.items.items) or tree.items.items[idx].status == "skipped":
        live = tree.items.active()
        idx = live[-1][0] if live else None
    if idx is None:
        return None
    item = tree.items.items[idx]
    ctx.rule("repair", f"same again: repeat item {idx + 1} ({item.short or item.label})")
    return ParsedInput(new_items=[ParsedItem(item_type=item.item_type, fields=_said_fields(item))])


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
    held = [i for i in typed if all(_uses(tree.items.items[i].fields, m.field, m.value) for m in values
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


def _uses(fields: dict[str, Any], field: str, value: str) -> bool:
    current = fields.get(field)
    entries = current if isinstance(current, list) else [current]
    return any(entry_name(e) == value for e in entries)


def _removals(ctx: Ctx, parsed: ParsedInput) -> tuple[ParsedInput, list[int], bool, list[int]] | None:
    """Several removals in one message (the parse holds one): (parse of the rest, items to remove, unclear, the
    items an unclear reference could mean)."""
    if not ctx.has("remove") or parsed.wants_cancel:
        return None
    tree = ctx.conv.order
    removal, rest = _split_removal(ctx)
    if has_phrase(normalise(removal), ctx.kw.get("everything", ())) and tree.items.active():
        ctx.rule("repair", "remove everything")
        return ParsedInput(wants_cancel=True), [], False, []
    refs, unresolved, candidates = _references(ctx, removal)
    if len(refs) < 2 and not unresolved:
        return None
    ctx.rule("repair", f"remove items {[r + 1 for r in refs]}" + (" (a reference is unresolved)" if unresolved
                                                                  else ""))
    base = parse_deterministic(rest, ctx.menu, tree) if rest.strip() else ParsedInput()
    return base, refs, unresolved, candidates


def _reference_doubt(ctx: Ctx, parsed: ParsedInput) -> bool:
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


def _not_in_the_list(ctx: Ctx) -> bool:
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


def _which_one(ctx: Ctx) -> ParsedInput | None:
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


def _another_item_named(ctx: Ctx, parsed: ParsedInput) -> ParsedInput | None:
    """A question pending about an item's field answered with a value and another item's own words ("What size,
    the pizza?" - "add a small coke"): the value is that item's, not the answer (the parser took "small" as the
    pizza's and left "coke" unparsed). The utterance is read as an order; the question stays pending. Words that
    are values of the field asked ("sprite" for a combo's drink) answer it - unless the utterance adds an item
    ("also a large sprite", "and a sprite": the keyword lists' ``adds_item`` anywhere, a ``list_joins`` word
    first), when another item's own words name a new item."""
    pend = _pending_item(ctx.conv.order)
    if pend is None or not parsed.answers or parsed.new_items:
        return None
    idx, field, _ = pend
    asked_type = ctx.conv.order.items.items[idx].item_type
    by_phrase: dict[str, list[Mention]] = {}
    for m in mentions(ctx.text or "", ctx.menu):
        by_phrase.setdefault(m.phrase, []).append(m)
    words = ctx.norm.split()
    adds = bool(ctx.has("adds_item")) or bool(words and words[0] in ctx.kw.get("list_joins", ()))
    others = [ms for ms in by_phrase.values()
              if (adds or not any(m.item_type == asked_type and m.field == field for m in ms))
              and any(m.item_type != asked_type and _names_an_item(ctx, m) for m in ms)]
    if not others:
        return None
    tree = ctx.conv.order.model_copy(deep=True)
    tree.pending = None
    fresh = parse_deterministic(ctx.text or "", ctx.menu, tree)
    if not any(it.item_type != asked_type for it in fresh.new_items):
        return None
    ctx.rule("repair", f"{others[0][0].phrase!r} names another item: an order, not the answer to {field}")
    if adds:  # the parser's doubt (a new drink or the combo's?) is settled by "also"/"and": menu words are read
        unread = [w for w in fresh.unparsed if not mentions(w, ctx.menu)]
        fresh = fresh.model_copy(update={"unparsed": unread, "confidence": fresh.confidence if unread else 1.0})
    return fresh


def _new_item_offered(ctx: Ctx, parsed: ParsedInput) -> ParsedInput | None:
    """The answer to the offer of a new item ("honey" after a bagel: "would you like a coffee with honey?"): yes
    adds it; naming one of the item types offered ("a latte", "fries") adds that one with the values said before -
    unless the offer is declined first ("no, a latte": a latte as said)."""
    proposal = ctx.conv.proposal
    if proposal is None or proposal.get("kind") != "new":
        return None
    offered: dict[str, dict[str, Any]] = proposal.get("fields", {})
    if ctx.only("yes") and len(offered) == 1:
        item_type, fields = next(iter(offered.items()))
        ctx.rule("repair", f"yes to the offer: a new {item_type}")
        return ParsedInput(new_items=[ParsedItem(item_type=item_type, fields=dict(fields))], confidence=1.0)
    if ctx.has("no"):  # "no, a latte": the offer declined, the latte ordered without the values offered
        return None
    if len(parsed.new_items) == 1 and parsed.new_items[0].item_type in offered and not parsed.modifications:
        item = parsed.new_items[0]
        fields = {k: v for k, v in offered[item.item_type].items() if k not in item.fields} | item.fields
        ctx.rule("repair", f"the offer taken as a {item.item_type}, with the values said before")
        return parsed.model_copy(update={"new_items": [item.model_copy(update={"fields": fields})]})
    return None


def _yes_no_to_our_question(ctx: Ctx, parsed: ParsedInput) -> ParsedInput | None:
    """A bare yes/no answers the question the assistant asked last - an offer ("would you like a coffee with
    honey?", "diet coke instead?") or "which one?" -, not the order's pending one (the parser reads "no" as "not
    toasted" while the bagel's "toasted?" is pending): nothing of the order is answered by it."""
    if ctx.conv.last_question not in ("proposal", "reference", "new_item") or not ctx.only("yes", "no"):
        return None
    ctx.rule("repair", f"yes/no answers the assistant's {ctx.conv.last_question} question, not the order's")
    return ParsedInput()


def _instead_of_the_offer(ctx: Ctx, parsed: ParsedInput) -> ParsedInput | None:
    """Out of stock, an alternative offered (``proposal`` of kind ``value``): another value of that field named
    instead ("a sprite instead", "pepsi") goes on the lines that lost their value, not on a new line (which would
    leave the emptied lines to be asked again and charged) - on every one of them (two combos whose coke ran out
    answered "sprite"), the answer to the question pending about one of them included."""
    proposal = ctx.conv.proposal
    if proposal is None or proposal.get("kind") != "value":
        return None
    item_type, field = proposal["item_type"], proposal["field"]
    tree = ctx.conv.order
    lines = lines_still_without(tree, proposal)
    if not lines:
        return None
    pend = _pending_item(tree)
    if field in parsed.answers and pend is not None and pend[0] in lines and pend[1] == field:
        others = [i for i in lines if i != pend[0]]
        if not others:
            return None
        value = parsed.answers[field]
        ctx.rule("repair", f"{value!r} answers the offer: also on items {[i + 1 for i in others]}")
        mods = [Modification(item_index=i, field=field, new_value=value) for i in others]
        return parsed.model_copy(update={"modifications": list(parsed.modifications) + mods})
    named = [n for n, it in enumerate(parsed.new_items) if it.item_type == item_type and field in it.fields]
    if len(named) != 1:
        return None
    item = parsed.new_items[named[0]]
    mods = [Modification(item_index=idx, field=name, new_value=value) for idx in lines
            for name, value in item.fields.items()]
    ctx.rule("repair", f"{item.fields[field]!r} instead of the offer: on items {[i + 1 for i in lines]}")
    rest = [it for n, it in enumerate(parsed.new_items) if n != named[0]]
    return parsed.model_copy(update={"new_items": rest, "modifications": mods + list(parsed.modifications)})


def _names_an_item(ctx: Ctx, m: Mention) -> bool:
    return m.field is None or ctx.menu.item_types[m.item_type].fields[m.field].names_item


def _name_is_not_a_name(ctx: Ctx, parsed: ParsedInput) -> ParsedInput:
    """"c'est tout" or an item's name ("coke") answering "what name?" is not a name (the parser knows English
    answers such as "pickup" are not names; the keyword lists add the other languages). A topping's name may be
    a person's: "Basil", "Olive"."""
    name = normalise(parsed.customer_name or "")
    control = [ctx.kw.get(k, ()) for k in ("yes", "no", "done", "needs_time", "never_mind", "not_right", "goodbye")]
    if name and (only_phrases(name, *control) or any(
            m.phrase and normalise(m.phrase) == name and _names_an_item(ctx, m) for m in mentions(name, ctx.menu))):
        ctx.rule("repair", f"{parsed.customer_name!r} is not taken as a name")
        return parsed.model_copy(update={"customer_name": None})
    return parsed


def repair(ctx: Ctx) -> tuple[ParsedInput, list[int], bool]:
    """(parse to apply, extra removals, unclear)"""
    assert ctx.parsed is not None
    parsed = _name_is_not_a_name(ctx, ctx.parsed)
    if _not_in_the_list(ctx):
        return ParsedInput(confidence=0.0), [], True
    answered = _which_one(ctx)
    if answered is not None:
        return answered, [], False
    for fix in (_hesitation, _greeting_only, _new_item_offered, _yes_no_to_our_question, _another_item_named,
                _instead_of_the_offer, _yes_no, _info_keywords, _same_again):
        fixed = fix(ctx, parsed)
        if fixed is not None:
            return fixed, [], False
    removal = _removals(ctx, parsed)
    if removal is not None:
        base, refs, unresolved, candidates = removal
        if unresolved:  # nothing applied: the targeted question asks which item was meant
            if not refs:  # one removal: kept for the answer ("the second one"), asked among the items it fits
                ctx.pending_reference = {"kind": "remove", "candidates": candidates}
            return ParsedInput(confidence=0.0), [], True
        return base, refs, False
    return parsed, [], _reference_doubt(ctx, parsed)


def reparse_for_item(text: str, ctx: Ctx, idx: int) -> ParsedInput:
    tree = ctx.conv.order.model_copy(deep=True)
    tree.pending = PendingQuestion(task="item", item_index=idx, field=None)
    return parse_deterministic(text, ctx.menu, tree)
