"""Menu questions answered from the menu data (prices, options, sizes, stock); the order never changes."""

from __future__ import annotations

from ..frames import segment
from ..lexicon import get_lexicon
from ..menu import ItemTypeDef, Menu, ValueDef
from ..parsed_input import ParsedInput, ParsedItem
from ..parser import parse_deterministic
from ..references import name_field
from ..render import with_article
from ..state import update_state
from ..tokens import tokenize
from ..tree import ItemTask, OrderTask, new_order
from .menu_index import Mention, mention_groups, mentions, said_after
from .resources import has_phrase, join_list, keywords, money, normalise, say
from .views import named_text

MAX_VALUES = 6


def _item_words(menu: Menu) -> set[str]:
    """Words that name an item type ("combo", "pizza"): a field of that name (the combo's "combo") is not what
    "what combos do you have?" asks about."""
    words = {normalise(w) for t_name, t in menu.item_types.items() for w in (t_name, t.label, *t.names)}
    return words | {w + "s" for w in words}


def _names_field(menu: Menu, norm: str) -> bool:
    return bool(_named_fields(menu, norm, available_only=False))


def _question_words(lang: str) -> set[str]:
    """Words a question about the menu is made of ("available", "left", "today"): never an item's name."""
    kw = keywords(lang)
    phrases = [p for ps in kw.get("question_topics", {}).values() for p in ps] + list(kw.get("question_words", ()))
    return {w for p in phrases for w in p.split()}


def _unknown_item(text: str, menu: Menu, lang: str) -> str | None:
    """What a question names that the menu doesn't have, read as the parser reads it: values right before an
    unknown word ("onion rings", "garlic bread") name an unknown item, not the value; the question's own words
    ("do you have olives available?", "pepperoni left?") are not that unknown word."""
    asked = _question_words(lang)
    chunks = get_lexicon(menu).chunk([t for t in tokenize(text) if normalise(t.raw) not in asked])
    if not any(f.unknown_head for f in segment(chunks, menu).frames):
        return None
    spans: list[list[str]] = []
    for k, ch in enumerate(chunks):
        if ch.kind == "unknown":
            if k and chunks[k - 1].kind == "unknown" and spans:
                spans[-1].append(ch.text)
            else:
                spans.append([ch.text])
    named = [" ".join(words) for words in spans if len(words) > 1]
    return named[0].strip(" ?!.") if named else None


def _topic(norm: str, language: str, menu: Menu) -> str:
    topics = keywords(language).get("question_topics", {})
    order = ("price", "options", "stock") if _names_field(menu, norm) else ("price", "stock", "options")
    for topic in order:
        if has_phrase(norm, topics.get(topic, ())):
            return topic
    return "options"


def _values(tdef: ItemTypeDef, field: str, lang: str) -> str:
    """The in-stock values of a field, said as a list: past MAX_VALUES, the rest is counted, never dropped."""
    values = [v.display for v in tdef.fields[field].values if v.in_stock]
    if len(values) > MAX_VALUES:
        values = values[:MAX_VALUES] + [say(lang, "word-more", count=len(values) - MAX_VALUES)]
    return join_list(lang, values)


def _field_words(field: str) -> set[str]:
    word = normalise(field.replace("_", " "))
    return {word, word + "s"}


def _named_fields(menu: Menu, norm: str, available_only: bool = True) -> list[tuple[str, str]]:
    """(item type, field) pairs whose field the text names ("what sizes?"), over every available item type."""
    items = _item_words(menu)
    return [(t_name, f_name) for t_name, tdef in menu.item_types.items() if tdef.available or not available_only
            for f_name, fdef in tdef.fields.items()
            if fdef.values and any(f" {w} " in f" {norm} " for w in _field_words(f_name) - items)]


def _field_values(menu: Menu, item_type: str, field: str, lang: str) -> tuple[str, str]:
    tdef = menu.item_types[item_type]
    return "menu-field-values-question", say(lang, "menu-field-values-question", item=tdef.label,
                                             field=field.replace("_", " "), values=_values(tdef, field, lang))


def _as_ordered(menu: Menu, item: ParsedItem) -> ItemTask | None:
    """The item as the order would hold it (defaults, surcharges), or None when the order would refuse it."""
    tree, diff = update_state(new_order(menu.id), ParsedInput(new_items=[item]), menu)
    return tree.items.items[0] if tree.items.items and not diff.errors else None


def _quote(text: str, menu: Menu, named: list[Mention], lang: str) -> tuple[str, str] | None:
    """"how much is a large pepperoni pizza?": the item read as an order is read, priced as the order would
    price it (size, item name and option surcharges); per size when no size was said. Only when the item is
    named: "how much is extra cheese?" is the option's surcharge."""
    parsed = parse_deterministic(text, menu)
    if len(parsed.new_items) > 1:
        return _quote_all(parsed.new_items, menu, lang)
    if len(parsed.new_items) != 1:
        return None
    said = parsed.new_items[0]
    tdef = menu.item_types[said.item_type]
    if not any(m.item_type == said.item_type and (m.field is None or tdef.fields[m.field].names_item)
               for m in named):
        return None
    whole = _as_ordered(menu, said)
    if whole is None:
        return None
    size = tdef.size_field
    cur = menu.currency
    if size is None or size in said.fields or not tdef.size_prices:
        return lines_price([whole], menu, lang)
    parts = []
    for s in tdef.size_prices:
        vdef = tdef.fields[size].value(s)
        sized = _as_ordered(menu, said.model_copy(update={"fields": {**said.fields, size: s}}))
        if vdef is not None and vdef.in_stock and sized is not None:
            parts.append(f"{money(lang, sized.unit_price, cur)} ({vdef.display})")
    return "menu-price-sizes", say(lang, "menu-price-sizes", item=whole.short or tdef.label,
                                   prices=join_list(lang, parts[:MAX_VALUES]))


def _quote_all(items: list[ParsedItem], menu: Menu, lang: str) -> tuple[str, str] | None:
    """"how much for two cheeseburgers and a large fries?": each item priced as the order would price its line,
    and their total; None when one of them is no line the order would take (then one mention is answered)."""
    lines = [_as_ordered(menu, item) for item in items]
    if any(line is None or line.get_missing_fields() for line in lines):
        return None  # "a pizza and a coke": the pizza's size decides its price - not said, not guessed
    return lines_price([line for line in lines if line is not None], menu, lang)


def _line_name(line: ItemTask, menu: Menu) -> str:
    """The line's summary; its label said in it while the value naming the item is not said: "with tomato" names
    no burger, "burger with tomato" does."""
    kind = name_field(menu, line.item_type)
    return named_text(line) if kind is not None and line.fields.get(kind) is None else line.summary or line.label


def lines_price(lines: list[ItemTask], menu: Menu, lang: str) -> tuple[str, str]:
    """Lines priced as the order prices them: one line's price, several lines' total."""
    if len(lines) == 1:
        return "menu-price", say(lang, "menu-price", item=_line_name(lines[0], menu),
                                 price=money(lang, lines[0].line_total, menu.currency))
    total = round(sum(line.line_total for line in lines), 2)
    names = join_list(lang, [with_article(_line_name(line, menu), line.quantity) if lang == "en"
                             else _line_name(line, menu) for line in lines])
    return "menu-price-total", say(lang, "menu-price-total", items=names, price=money(lang, total, menu.currency))


def _price_open(line: ItemTask, menu: Menu) -> bool:
    """A field the line misses would change its price: a size priced per size, a kind or an option with a price
    (the burger's kind; not the coffee's "iced or hot?")."""
    tdef = menu.item_types[line.item_type]
    return any((f == tdef.size_field and tdef.size_prices) or any(v.price for v in tdef.fields[f].values)
               for f in line.get_missing_fields() if f in tdef.fields)


def order_price(tree: OrderTask, menu: Menu, lang: str) -> tuple[str, str] | None:
    """The order's price ("add mushrooms, how much is that?"): its lines priced; None while one's price is open."""
    lines = [it for _, it in tree.items.active()]
    if not lines or any(_price_open(line, menu) for line in lines):
        return None
    return lines_price(lines, menu, lang)


def _price(menu: Menu, m: Mention, lang: str) -> tuple[str, str]:
    tdef = menu.item_types[m.item_type]
    cur = menu.currency
    name = tdef.label
    extra = 0.0
    if m.field and m.value:
        fdef = tdef.fields[m.field]
        vdef = fdef.value(m.value)
        if vdef is not None and not fdef.names_item and m.field != tdef.size_field:
            if vdef.price:
                return "menu-price-option", say(lang, "menu-price-option", option=vdef.display.capitalize(),
                                                price=money(lang, vdef.price, cur))
        if vdef is not None and fdef.names_item:
            name, extra = vdef.display, vdef.price
        if vdef is not None and m.field == tdef.size_field and m.value in tdef.size_prices:
            return "menu-price", say(lang, "menu-price", item=f"{vdef.display} {tdef.label}",
                                     price=money(lang, tdef.size_prices[m.value] + extra, cur))
    if tdef.size_field and tdef.size_prices:
        sizes = tdef.fields[tdef.size_field]
        parts = [f"{money(lang, p + extra, cur)} ({(sizes.value(s).display if sizes.value(s) else s)})"
                 for s, p in tdef.size_prices.items()
                 if sizes.value(s) is not None and sizes.value(s).in_stock][:MAX_VALUES]
        return "menu-price-sizes", say(lang, "menu-price-sizes", item=name, prices=join_list(lang, parts))
    return "menu-price", say(lang, "menu-price", item=name, price=money(lang, tdef.base_price + extra, cur))


def _option(menu: Menu, m: Mention) -> ValueDef | None:
    """The value ``m`` names when it is an option of its item (a topping, a milk, a crust): not the item's name
    or kind ("coke", "plain" bagel), not its size."""
    tdef = menu.item_types[m.item_type]
    if m.field is None or m.value is None or tdef.fields[m.field].names_item:
        return None
    if m.field in (tdef.size_field, name_field(menu, m.item_type)):
        return None
    return tdef.fields[m.field].value(m.value)


def _option_price(menu: Menu, group: list[Mention], text: str, lang: str) -> tuple[str, str] | None:
    """An option named alone ("how much is tomato?"): its surcharge, as before; no extra charge only when it has
    no price on any item it is an option of. None when the phrase names anything else (an item, a size, a kind)
    or is free on one item and priced on another ("cheese": free on the combo, $0.75 on the burger), or when it
    is said as a thing to order ("how much is a can?": a canned drink's price, not the can's)."""
    values = [_option(menu, m) for m in group]
    if not values or any(v is None for v in values):
        return None
    if values[0].price:
        return _price(menu, group[0], lang)
    if any(v.price for v in values if v is not None):
        return None
    if said_after(text, menu, group[0], keywords(lang).get("order_articles", ())):
        return None
    return "menu-price-option-free", say(lang, "menu-price-option-free", option=values[0].display.capitalize())


def _option_prices(menu: Menu, text: str, lang: str) -> list[tuple[str, str]] | None:
    """The options a price question names and nothing else, each priced ("how much are mushrooms and olives?":
    both, not the first only); None when it names anything else or one of them is no option's answer."""
    groups = list({tuple((m.item_type, m.field, m.value) for m in g): g for g in mention_groups(text, menu)}.values())
    parts = [_option_price(menu, g, text, lang) for g in groups]
    return [p for p in parts if p is not None] if parts and None not in parts else None


def _stock(menu: Menu, m: Mention, lang: str) -> tuple[str, str]:
    tdef = menu.item_types[m.item_type]
    ok = tdef.available
    name = tdef.label
    if m.field and m.value:
        vdef = tdef.fields[m.field].value(m.value)
        name = vdef.display if vdef else m.value
        ok = ok and (vdef is None or vdef.in_stock)
    key = "menu-in-stock" if ok else "menu-out-of-stock"
    return key, say(lang, key, item=name)


def _options(menu: Menu, m: Mention, norm: str, lang: str) -> tuple[str, str]:
    tdef = menu.item_types[m.item_type]
    for t_name, f_name in _named_fields(menu, norm):  # "what toppings / sizes" names one field
        if t_name == m.item_type:
            return _field_values(menu, t_name, f_name, lang)
    fields = [say(lang, "menu-field-values", field=f.replace("_", " "), values=_values(tdef, f, lang))
              for f, d in tdef.fields.items() if d.values]
    return "menu-options", say(lang, "menu-options", item=tdef.label, fields="; ".join(fields))


def _kinds(menu: Menu, named: list[Mention], norm: str, lang: str) -> tuple[str, str] | None:
    """"what bagels do you have?": an item type named alone after "what/which" - its kinds (the values of the
    field that names the item), unless a field or another topic ("what's in", "toppings") was asked about."""
    topics = keywords(lang).get("question_topics", {})
    if (len(named) != 1 or named[0].field is not None or not has_phrase(norm, topics.get("kinds", ()))
            or _names_field(menu, norm) or has_phrase(norm, [p for p in topics.get("options", ()) if p != "which"])):
        return None
    tdef = menu.item_types[named[0].item_type]
    field = name_field(menu, named[0].item_type)  # the parser's: names_item, else the "<x>_type" field
    if field is None or not tdef.fields[field].values:
        return _options(menu, named[0], norm, lang)  # "what pizzas do you have?": no kinds, its options
    return "menu-kinds", say(lang, "menu-kinds", item=tdef.label, values=_values(tdef, field, lang))


def answer_menu_question(text: str, menu: Menu, lang: str) -> list[tuple[str, str]]:
    """(response key, text) parts answering a menu question."""
    norm = normalise(text)
    named = mentions(text, menu)
    items = join_list(lang, [t.label for t in menu.item_types.values() if t.available])
    if not named:
        fields = _named_fields(menu, norm)  # "what sizes do you have?": that field of every item type having it
        if fields:
            return [_field_values(menu, t_name, f_name, lang) for t_name, f_name in fields]
        if has_phrase(norm, ("menu", "carte", "what do you have", "what do you sell")):
            return [("menu-items", say(lang, "menu-items", items=items))]
        return [("menu-unknown", say(lang, "menu-unknown", items=items))]
    topic = _topic(norm, lang, menu)
    types = [x.item_type for x in named if x.field is None]
    if types:  # "how much is a large pizza": the values of the item type named
        named = [x for x in named if x.item_type in types]
    m = next((x for x in named if x.field), named[0]) if topic != "options" else named[0]
    kinds = _kinds(menu, named, norm, lang) if topic != "price" else None
    if kinds is not None:
        return [kinds]
    if topic == "price":
        quote = _quote(text, menu, named, lang)
        options = None if quote or types else _option_prices(menu, text, lang)
        return options or [quote or _price(menu, m, lang)]
    if topic == "stock":
        unknown = _unknown_item(text, menu, lang)
        if unknown is not None:
            return [("menu-not-on-menu", say(lang, "menu-not-on-menu", item=unknown, items=items))]
        return [_stock(menu, m, lang)]
    return [_options(menu, m, norm, lang)]
