"""Property tests: utterances generated from menu entities parse back to the same items.

The generator only uses menu data (labels, bool words, units), never dataset text.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from mojodex_core.order import get_next_action, new_order, parse_deterministic, update_state
from mojodex_core.order.menu import FieldDef, Menu, load_menu

from .conftest import MENUS

NUMBER_WORDS = {2: "two", 3: "three", 4: "four", 5: "five"}
MENU_LIST = [load_menu(p) for p in sorted(MENUS.glob("*.json"))]
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _values(fdef: FieldDef) -> list[Any]:
    return [v for v in fdef.values if v.in_stock]


def _surface(fdef: FieldDef, value_id: str) -> str:
    if fdef.kind == "measure":
        amount, unit = value_id.split(" ", 1)
        return f"{amount} {fdef.units[unit][0]}"
    return fdef.value(value_id).display


@st.composite
def item_phrase(draw: Any, menu: Menu) -> tuple[str, str, dict[str, Any]]:
    t_name = draw(st.sampled_from([t for t, d in menu.item_types.items() if d.available]))
    tdef = menu.item_types[t_name]
    fields: dict[str, Any] = {}
    qty = draw(st.sampled_from([1, 1, 2, 3, 5]))
    pre: list[str] = []
    name = ""
    with_parts: list[str] = []
    excluded: list[str] = []
    for f_name, fdef in tdef.fields.items():
        if f_name == "quantity":
            continue
        if fdef.kind == "bool":
            if fdef.default is None and draw(st.booleans()):
                value = draw(st.booleans())
                fields[f_name] = value
                pre.append(fdef.true_words[0] if value else fdef.false_words[0])
            continue
        values = _values(fdef)
        if not values or not draw(st.booleans()):
            continue
        if fdef.multi:
            chosen = draw(st.lists(st.sampled_from(values), min_size=1, max_size=3, unique_by=lambda v: v.id))
            if fdef.qualifiers:
                entries = []
                for v in chosen:
                    qual = draw(st.sampled_from([None, None, *menu.qualifiers]))
                    entries.append({"name": v.id, "quantity": qual} if qual else {"name": v.id})
                    word = menu.qualifiers[qual][0] if qual else ""
                    with_parts.append(f"{word} {v.display}".strip())
                fields[f_name] = entries
                # not a value the item's own name contains: "a bacon burger ... but no bacon" contradicts itself,
                # and the parser rightly reports it
                rest = [v for v in values if v.id not in {c.id for c in chosen}
                        and not set(v.display.split()) <= set(name.split())]
                if fdef.negatable and rest and draw(st.booleans()):
                    neg = draw(st.sampled_from(rest))
                    fields[f"excluded_{f_name}"] = [{"name": neg.id}]
                    excluded.append(neg.display)
            else:
                fields[f_name] = [v.id for v in chosen]
                (with_parts if fdef.with_list else pre).extend(v.display for v in chosen)
            continue
        value = draw(st.sampled_from(values))
        fields[f_name] = value.id
        if fdef.names_item:
            name = value.display
        elif fdef.with_list:
            with_parts.append(value.display)
        else:
            pre.append(_surface(fdef, value.id))
    noun = "" if name else tdef.names[0] if tdef.names else tdef.label
    head = " ".join(pre + [name or noun])
    if qty > 1:
        fields["quantity"] = qty
        det = NUMBER_WORDS[qty]
    else:
        det = "an" if head[0] in "aeiou" else "a"
    text = f"{det} {head}"
    if with_parts:
        text += " with " + " and ".join(with_parts)
    if excluded:
        text += " but no " + excluded[0]
    return text, t_name, fields


def _announces_its_parts(items: list[tuple[str, str, dict[str, Any]]]) -> bool:
    """ "five drinks and two cokes and three cokes" reads as five drinks, split into their parts (the parser's
    announced quantity, docs/order_engine.md): counts that add up so are another order than the one drawn."""
    for i, (_, t_name, fields) in enumerate(items):
        total = 0
        for count, (_, other, other_fields) in enumerate(items[i + 1:], start=1):
            if other != t_name:
                break
            total += other_fields.get("quantity", 1)
            if count >= 2 and total == fields.get("quantity", 1):
                return True
    return False


@st.composite
def order_utterance(draw: Any, menu: Menu) -> tuple[str, list[tuple[str, dict[str, Any]]]]:
    items = draw(st.lists(item_phrase(menu), min_size=1, max_size=3))
    assume(not _announces_its_parts(items))
    text = "i'd like " + " and ".join(t for t, _, _ in items)
    return text, [(t, f) for _, t, f in items]


def _normalise(fields: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for k, v in fields.items():
        out[k] = sorted(v, key=str) if isinstance(v, list) else v
    return out


@st.composite
def menu_and_order(draw: Any) -> tuple[Menu, str, list[tuple[str, dict[str, Any]]]]:
    menu = draw(st.sampled_from(MENU_LIST))
    text, items = draw(order_utterance(menu))
    return menu, text, items


@SETTINGS
@given(menu_and_order())
def test_generated_orders_parse_to_every_item_with_its_attributes(case):
    menu, text, expected = case
    parsed = parse_deterministic(text, menu)
    got = [(i.item_type, _normalise(i.fields)) for i in parsed.new_items]
    assert got == [(t, _normalise(f)) for t, f in expected], text
    assert parsed.unparsed == []


@SETTINGS
@given(menu_and_order(), st.data())
def test_update_state_never_loses_an_item_and_never_asks_filled_fields(case, data):
    menu, text, expected = case
    tree = new_order(menu.id)
    tree, diff = update_state(tree, parse_deterministic(text, menu, tree), menu)
    assert not diff.errors, text
    assert [it.item_type for it in tree.items.items] == [t for t, _ in expected]
    for _ in range(6):  # answer a few questions with menu values, checking each question
        action = get_next_action(tree, menu)
        if action.kind != "ask" or action.task != "item":
            break
        item = tree.items.items[action.item_index]
        assert item.fields.get(action.field) in (None, []), (text, action)
        assert action.field not in item.defaulted
        fdef = menu.item_types[item.item_type].fields[action.field]
        reply = (data.draw(st.sampled_from(["yes", "no"])) if fdef.kind == "bool" else
                 _surface(fdef, data.draw(st.sampled_from(_values(fdef))).id))
        count = len([i for i in tree.items.items if i.status != "skipped"])
        tree, _ = update_state(tree, parse_deterministic(reply, menu, tree), menu)
        assert len([i for i in tree.items.items if i.status != "skipped"]) == count, reply
