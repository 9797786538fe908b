"""Menu look-ups for the conversation: what a text mentions, closest menu names, alternatives, examples.

Everything comes from the menu data (labels, names, synonyms, stock), so a new shop needs no code.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rapidfuzz import fuzz, process

from ..menu import FieldDef, Menu, ValueDef
from ..tokens import singular
from ..tree import ItemTask
from .resources import normalise


@dataclass(frozen=True)
class Mention:
    item_type: str
    field: str | None  # None: the item type itself ("pizza")
    value: str | None
    phrase: str


@dataclass
class _Index:
    phrases: list[tuple[str, list[Mention]]]  # normalised phrase -> what it names (menu order), longest first
    names: dict[str, Mention]  # display name -> mention (for fuzzy "closest")


_CACHE: dict[int, tuple[Menu, _Index]] = {}


def _key(text: str) -> str:
    """Normalised and singular, with the parser's stemmer: "what bagels" names the bagel as the parser reads it."""
    return " ".join(singular(w) for w in normalise(text).split())


def _value_phrases(value: ValueDef) -> list[str]:
    return [value.id, value.display, *value.synonyms]


def _add(by_phrase: dict[str, list[Mention]], phrase: str, m: Mention) -> None:
    bucket = by_phrase.setdefault(phrase, [])
    if m not in bucket:
        bucket.append(m)


def index(menu: Menu) -> _Index:
    cached = _CACHE.get(id(menu))
    if cached is not None and cached[0] is menu:
        return cached[1]
    by_phrase: dict[str, list[Mention]] = {}
    names: dict[str, Mention] = {}
    for t_name, tdef in menu.item_types.items():
        m = Mention(t_name, None, None, tdef.label)
        for p in (tdef.label, *tdef.names, t_name):
            _add(by_phrase, _key(p), m)
        names.setdefault(tdef.label, m)
        for f_name, fdef in tdef.fields.items():
            for v in fdef.values:
                vm = Mention(t_name, f_name, v.id, v.display)
                for p in _value_phrases(v):
                    _add(by_phrase, _key(p), vm)
                names.setdefault(v.display, vm)
    phrases = sorted(((p, ms) for p, ms in by_phrase.items() if p), key=lambda pm: (-len(pm[0]), pm[0]))
    built = _Index(phrases=phrases, names=names)
    if len(_CACHE) > 64:
        _CACHE.clear()
    _CACHE[id(menu)] = (menu, built)
    return built


def menu_phrases(menu: Menu) -> list[str]:
    """Every name the menu gives an item type or a value, normalised (not stemmed), longest first."""
    names = {normalise(p) for tdef in menu.item_types.values() for p in (tdef.label, *tdef.names)}
    names |= {normalise(p) for tdef in menu.item_types.values() for fdef in tdef.fields.values()
              for v in fdef.values for p in _value_phrases(v)}
    return sorted((n for n in names if n), key=lambda n: (-len(n), n))


def mention_groups(text: str, menu: Menu) -> list[list[Mention]]:
    """Menu things named in ``text`` (longest phrases first, no overlaps), one group per phrase said, in text
    order; a phrase naming several things ("large": a pizza size and a drink size) groups all of them."""
    norm = f" {_key(text)} "
    found: dict[int, list[Mention]] = {}
    for phrase, ms in index(menu).phrases:
        key = f" {phrase} "
        start = norm.find(key)
        while start >= 0:
            found.setdefault(start, []).extend(ms)
            norm = norm[:start] + " " + "#" * (len(key) - 2) + " " + norm[start + len(key):]
            start = norm.find(key)
    return [found[start] for start in sorted(found)]


def said_after(text: str, menu: Menu, m: Mention, words: tuple[str, ...]) -> bool:
    """Whether the value ``m`` names is said right after one of ``words`` in ``text`` ("a can")."""
    if m.field is None or m.value is None:
        return False
    value = menu.item_types[m.item_type].fields[m.field].value(m.value)
    norm = f" {_key(text)} "
    return value is not None and any(f" {_key(w)} {_key(p)} " in norm for w in words for p in _value_phrases(value))


def mentions(text: str, menu: Menu) -> list[Mention]:
    """Menu things named in ``text``, in text order: every group of :func:`mention_groups`."""
    return [m for group in mention_groups(text, menu) for m in group]


def in_stock(menu: Menu, m: Mention) -> bool:
    tdef = menu.item_types[m.item_type]
    if not tdef.available:
        return False
    if m.field and m.value:
        v = tdef.fields[m.field].value(m.value)
        return v is None or v.in_stock
    return True


def closest(text: str, menu: Menu, limit: int = 3) -> list[str]:
    """Display names of the in-stock menu entries closest to ``text``: item types, item-naming values and
    list values (toppings, extras); when nothing is close, the item types lead."""
    choices: list[str] = []
    types: list[str] = []
    for tdef in menu.item_types.values():
        if not tdef.available:
            continue
        types.append(tdef.label)
        for fdef in tdef.fields.values():
            if fdef.names_item or fdef.multi:
                choices.extend(v.display for v in fdef.values if v.in_stock)
    pool = list(dict.fromkeys(types + choices))
    hits = process.extract(normalise(text), pool, scorer=fuzz.WRatio, limit=limit, processor=normalise)
    names = [name for name, _score, _ in hits]
    if not hits or hits[0][1] < 70:
        names = list(dict.fromkeys(types + names))
    return names[:limit]


def field_value_alternative(menu: Menu, item_type: str, field: str, value: str) -> ValueDef | None:
    """The closest in-stock value of the same field: a near-identical name ("coke" -> "coke zero"), else its
    nearest neighbour in the menu's list (menus list similar things together), the next one first."""
    fdef = menu.item_types[item_type].fields[field]
    values = fdef.values
    pos = next((i for i, v in enumerate(values) if v.id == value), None)
    pool = [v for v in values if v.in_stock and v.id != value]
    if not pool:
        return None
    current = values[pos] if pos is not None else None
    label = current.display if current else value
    best = process.extractOne(label, [v.display for v in pool], scorer=fuzz.WRatio)
    if best is not None and best[1] >= 85:
        return pool[best[2]]
    if pos is None:
        return pool[0]
    return min(pool, key=lambda v: (abs(values.index(v) - pos), values.index(v) < pos))


def item_type_alternative(menu: Menu, item_type: str) -> str | None:
    """The closest available item type: one of the same role (a drink for a drink), none when the role has no
    other; by name only for an item type without a role."""
    tdef = menu.item_types.get(item_type)
    pool = [n for n, t in menu.item_types.items() if n != item_type and t.available]
    if not pool:
        return None
    role = getattr(tdef, "role", None) if tdef else None
    if role:
        return next((n for n in pool if getattr(menu.item_types[n], "role", None) == role), None)
    label = tdef.label if tdef else item_type
    ranked = process.extract(label, [menu.item_types[n].label for n in pool], scorer=fuzz.WRatio, limit=1)
    return pool[ranked[0][2]]


def first_in_stock(fdef: FieldDef) -> ValueDef | None:
    return next((v for v in fdef.values if v.in_stock), None)


def value_label(fdef: FieldDef, value: Any) -> str:
    return fdef.render(value)


def example_order(menu: Menu) -> str:
    """A concrete order sentence from the menu: "a large pizza"."""
    for tdef in menu.item_types.values():
        if not tdef.available:
            continue
        words = []
        for f in tdef.fields.values():
            if f.required and f.kind == "choice" and f.default is None and not f.names_item:
                v = first_in_stock(f)
                if v:
                    words.append(v.display)
                    break
        named = next((first_in_stock(f) for f in tdef.fields.values() if f.names_item and first_in_stock(f)), None)
        noun = named.display if named else tdef.label
        return " ".join(["one", *words, noun])
    return next(iter(menu.item_types.values())).label


def example_answer(menu: Menu, item: ItemTask | None, field: str | None) -> str | None:
    """A concrete answer to an item question: "large", "yes"..."""
    if item is None or field is None:
        return None
    fdef = menu.item_types[item.item_type].fields.get(field)
    if fdef is None:
        return None
    if fdef.kind == "bool":
        return fdef.true_label or "yes"
    v = first_in_stock(fdef)
    return f"{v.display} {item.short or item.label}".strip() if v else None


def suggestions(menu: Menu, roles: tuple[str, ...] = (), limit: int = 3) -> list[str]:
    """Names of available item types (of the given roles when any) to suggest."""
    out = []
    for tdef in menu.item_types.values():
        if not tdef.available:
            continue
        if roles and getattr(tdef, "role", None) not in roles:
            continue
        named = [f for f in tdef.fields.values() if f.names_item]
        if named:
            out.extend(v.display for v in named[0].values if v.in_stock)
        else:
            out.append(tdef.label)
    seen: list[str] = []
    for name in out:
        if name not in seen:
            seen.append(name)
    return seen[:limit]
