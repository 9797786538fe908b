"""Conversation repair on top of the parser's output.

The parser reads one message against the menu; some things only make sense against the conversation:

* bare yes/no (in any language of the keyword files) answering a yes/no item question or declining an
  optional one;
* "same again" / "another one": the last mentioned item again;
* references by ordinal or by type for changes and removals ("make the second one large", "remove the
  pizza and the coke"): several removals become extra cancellations (``cancels``);
* "both large": the values said apply to every live item that has that field.

What the parse cannot represent is never dropped: a reference that resolves to nothing marks the turn
unclear (``lowConfidence`` -> Clarifying).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from ..parsed_input import Modification, ParsedInput, ParsedItem
from ..parser import parse_deterministic
from ..tree import OrderTask, PendingQuestion
from .menu_index import mentions
from .resources import has_phrase, normalise

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


def _said_fields(item: Any) -> dict[str, Any]:
    return {k: v for k, v in item.fields.items() if k not in item.defaulted and v not in (None, [], "")}


def _same_again(ctx: Ctx, parsed: ParsedInput) -> ParsedInput | None:
    if parsed.new_items or parsed.modifications or not ctx.has("same_again"):
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
_KEEP_WORDS = (" just ", " only ", " but ", " keep ", " juste ", " seulement ", " mais ")


def _removal_text(ctx: Ctx) -> str:
    """The clauses that remove something, cut before "just/only/but" ("forget the bagel. Just the latte")."""
    out = []
    for clause in _CLAUSE.split(ctx.text or ""):
        norm = normalise(clause)
        if has_phrase(norm, ctx.kw.get("remove", ())):
            padded = f" {norm} "
            cut = min((padded.find(w) for w in _KEEP_WORDS if w in padded), default=len(padded))
            out.append(padded[:cut])
    return " ".join(out)


def _references(ctx: Ctx, text: str) -> tuple[list[int], bool]:
    """Live items ``text`` refers to (ordinals, item names, item-naming values) and whether a reference
    resolved to nothing."""
    tree = ctx.conv.order
    live = [i for i, _ in tree.items.active()]
    refs: list[int] = []
    unresolved = False
    words = normalise(text).split()
    for pos, word in enumerate(words):
        n = ctx.kw.get("ordinals", {}).get(word)
        if n is None or pos + 1 >= len(words) and word != "last":
            continue
        k = n - 1 if n > 0 else len(live) - 1
        if 0 <= k < len(live):
            refs.append(live[k])
        else:
            unresolved = True
    for m in mentions(text, ctx.menu):
        for i in live:
            it = tree.items.items[i]
            if it.item_type != m.item_type:
                continue
            if m.field is None or (m.value is not None and it.fields.get(m.field) == m.value):
                if i not in refs:
                    refs.append(i)
                break
    return refs, unresolved


def _removals(ctx: Ctx, parsed: ParsedInput) -> tuple[list[int], bool] | None:
    if not ctx.has("remove") or parsed.new_items or parsed.wants_cancel:
        return None
    tree = ctx.conv.order
    if ctx.has("everything") and tree.items.active():
        return [i for i, _ in tree.items.active()], False
    refs, unresolved = _references(ctx, _removal_text(ctx))
    if len(refs) < 2 and not unresolved:
        return None
    ctx.rule("repair", f"remove items {[r + 1 for r in refs]}" + (" (a reference is unresolved)" if unresolved
                                                                  else ""))
    return refs, unresolved


def _modify_by_reference(ctx: Ctx, parsed: ParsedInput) -> tuple[ParsedInput, bool] | None:
    """"make the second one large" (read by the parser as a new item): a change of the referenced item(s)."""
    words = ctx.norm.split()
    nouns = {w for m in mentions(ctx.text or "", ctx.menu) if m.field is None for w in normalise(m.phrase).split()}
    ref_words = set(ctx.kw.get("reference_words", ())) | nouns
    pairs = zip(words, words[1:], strict=False)
    ordinal = any(w in ctx.kw.get("ordinals", {}) and nxt in ref_words for w, nxt in pairs)
    both = bool(ctx.has("both")) and not parsed.new_items and len(ctx.conv.order.items.active()) >= 2
    if not (ordinal or both) or ctx.has("remove") or ctx.has("done"):
        return None
    values = parsed.new_items[0].fields if len(parsed.new_items) == 1 else dict(parsed.answers)
    values = {k: v for k, v in values.items() if k != "quantity" and v is not None}
    if not values:
        return None
    tree = ctx.conv.order
    if both:
        targets = [i for i, _ in tree.items.active()]
    else:
        refs, unresolved = _references(ctx, ctx.text or "")
        if unresolved or not refs:
            ctx.rule("repair", "ordinal reference to no item of the order")
            return parsed, True
        targets = refs[:1]
    mods = []
    for idx in targets:
        item = tree.items.items[idx]
        tdef = ctx.menu.item_types[item.item_type]
        for name, value in values.items():
            fdef = tdef.fields.get(name)
            if fdef is None:
                continue
            try:
                fdef.validate_value(value)
            except ValueError:
                continue
            mods.append(Modification(item_index=idx, field=name, new_value=value))
    if not mods:
        return parsed, True
    what = "both/all" if both else "ordinal"
    ctx.rule("repair", f"{what} reference: {[(m.item_index, m.field) for m in mods]}")
    return ParsedInput(modifications=mods, confidence=1.0), False


def repair(ctx: Ctx) -> tuple[ParsedInput, list[int], bool]:
    """(parse to apply, extra removals, unclear)"""
    parsed = ctx.parsed
    assert parsed is not None
    for fix in (_yes_no, _same_again):
        fixed = fix(ctx, parsed)
        if fixed is not None:
            return fixed, [], False
    removal = _removals(ctx, parsed)
    if removal is not None:
        refs, unresolved = removal
        if unresolved:
            return parsed, [], True
        base = parsed.model_copy(update={"cancel_item_index": None, "cancel_item": None})
        if len(refs) == len(ctx.conv.order.items.active()):
            return base.model_copy(update={"wants_cancel": True}), [], False
        return base, refs, False
    modified = _modify_by_reference(ctx, parsed)
    if modified is not None:
        return modified[0], [], modified[1]
    return parsed, [], False


def reparse_for_item(text: str, ctx: Ctx, idx: int) -> ParsedInput:
    tree = ctx.conv.order.model_copy(deep=True)
    tree.pending = PendingQuestion(task="item", item_index=idx, field=None)
    return parse_deterministic(text, ctx.menu, tree)
