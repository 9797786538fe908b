"""EXR notation (PIZZA dataset) from a ParsedInput, and unordered tree comparison.

The mapping is driven by the menu: an item type's ``exr`` tag names its order node
(``PIZZAORDER``), a field's ``exr`` tag names its leaf (``TOPPING``), and value ids
are the entity names. Qualified entries become ``(COMPLEX_<TAG> (QUANTITY q ) (<TAG> id ) )``
and ``excluded_<field>`` entries are wrapped in ``(NOT ...)``. Int fields with an
``exr`` tag (``NUMBER``) are always emitted, with the menu default when unsaid.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from .menu import Menu
from .parsed_input import ParsedInput

Tree = str | tuple[str, tuple["Tree", ...]]


def _leaf(tag: str, entry: Any) -> str:
    if isinstance(entry, dict):
        base = f"({tag} {entry['name']} )"
        qual = entry.get("quantity")
        return f"(COMPLEX_{tag} (QUANTITY {qual} ) {base} )" if qual else base
    if isinstance(entry, float) and entry.is_integer():
        entry = int(entry)
    return f"({tag} {entry} )"


def to_exr(parsed: ParsedInput, menu: Menu) -> str:
    """The dataset's EXR string for the new items of ``parsed``."""
    orders: list[str] = []
    for item in parsed.new_items:
        tdef = menu.item_types.get(item.item_type)
        if tdef is None or not tdef.exr:
            continue
        nodes: list[str] = []
        for name, fdef in tdef.fields.items():
            if not fdef.exr:
                continue
            value = item.fields.get(name)
            if value is None and fdef.kind == "int":
                value = fdef.default
            for entry in value if isinstance(value, list) else ([] if value is None else [value]):
                nodes.append(_leaf(fdef.exr, entry))
            for entry in item.fields.get(f"excluded_{name}", []) or []:
                nodes.append(f"(NOT {_leaf(fdef.exr, entry)} )")
        orders.append(f"({tdef.exr} {' '.join(nodes)} )")
    return f"(ORDER {' '.join(orders)} )"


def parse_sexpr(text: str) -> Tree:
    """Parse ``(LABEL child ... )`` into nested ``(label, children)`` tuples; atoms stay strings."""
    tokens = text.replace("(", " ( ").replace(")", " ) ").split()
    pos = 0

    def node() -> Tree:
        nonlocal pos
        if tokens[pos] != "(":
            pos += 1
            return tokens[pos - 1]
        pos += 1
        label = tokens[pos]
        pos += 1
        children: list[Tree] = []
        while tokens[pos] != ")":
            children.append(node())
        pos += 1
        return (label, tuple(children))

    if not tokens:
        raise ValueError("empty expression")
    try:
        result = node()
    except IndexError as exc:
        raise ValueError(f"unbalanced expression: {text!r}") from exc
    if pos != len(tokens):
        raise ValueError(f"trailing tokens in {text!r}")
    return result


def canonical(tree: Tree) -> str:
    """Order-independent canonical form: children sorted recursively (multiset semantics)."""
    if isinstance(tree, str):
        return tree
    label, children = tree
    return "(" + label + " " + " ".join(sorted(canonical(c) for c in children)) + " )"


def unordered_equal(a: str | Tree, b: str | Tree) -> bool:
    ta = parse_sexpr(a) if isinstance(a, str) else a
    tb = parse_sexpr(b) if isinstance(b, str) else b
    return canonical(ta) == canonical(tb)


def error_categories(predicted: str, gold: str) -> list[str]:
    """Coarse reasons why two EXR trees differ (for the bench report)."""
    p, g = parse_sexpr(predicted), parse_sexpr(gold)
    if canonical(p) == canonical(g):
        return []
    p_orders = [c for c in p[1] if isinstance(c, tuple)]
    g_orders = [c for c in g[1] if isinstance(c, tuple)]
    cats: list[str] = []
    pc, gc = Counter(canonical(o) for o in p_orders), Counter(canonical(o) for o in g_orders)
    p_left = [o for o in p_orders if _take(pc, gc, o)]
    g_left = [o for o in g_orders if _take(gc, Counter(canonical(x) for x in p_orders), o)]
    if len(p_left) > len(g_left):
        cats.append("extra item")
    elif len(p_left) < len(g_left):
        cats.append("missing item")
    for po, go in zip(sorted(p_left, key=canonical), sorted(g_left, key=canonical), strict=False):
        cats.extend(_order_diff(po, go))
    return sorted(set(cats)) or ["structure"]


def _take(mine: Counter[str], other: Counter[str], order: Tree) -> bool:
    key = canonical(order)
    if other[key] > 0:
        other[key] -= 1
        return False
    return True


def _order_diff(p: Tree, g: Tree) -> list[str]:
    assert not isinstance(p, str) and not isinstance(g, str)
    if p[0] != g[0]:
        return ["wrong item type"]
    drink = p[0] == "DRINKORDER"
    pc = Counter(canonical(c) for c in p[1])
    gc = Counter(canonical(c) for c in g[1])
    out: list[str] = []
    for key in (pc - gc) + (gc - pc):
        label = key[1:].split(" ", 1)[0]
        missing = key in gc and gc[key] > pc[key]
        if drink:
            out.append(f"drink {label.lower()}")
        elif label == "NUMBER":
            out.append("wrong count")
        elif label == "SIZE":
            out.append("wrong size")
        elif label == "STYLE":
            out.append("wrong style")
        elif label == "NOT":
            out.append("negation")
        elif label == "COMPLEX_TOPPING":
            out.append("topping qualifier")
        elif label == "TOPPING":
            out.append("missing topping" if missing else "extra topping")
        else:
            out.append(f"other {label.lower()}")
    return out
