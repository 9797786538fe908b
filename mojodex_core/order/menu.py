"""Menu configuration: item types, their fields, values, synonyms, prices and limits.

Menus live in ``tasks_config/menus/*.json`` and are validated by :class:`Menu`.
Everything the parser and the state machine know about a shop comes from here,
so adding a shop never needs code changes.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

FieldKind = Literal["choice", "bool", "int", "text", "measure"]

MENUS_DIR = Path(__file__).resolve().parents[2] / "tasks_config" / "menus"


class MenuError(ValueError):
    """A menu file is missing, unreadable or invalid."""


def entry_name(entry: Any) -> Any:
    """The value id of a field entry: an id, or a qualified entry ``{"name": id, "quantity": ...}``."""
    return entry.get("name") if isinstance(entry, dict) else entry


def default_label(value_id: str) -> str:
    """Human label for an entity id: ``BANANA_PEPPERS`` -> ``banana peppers``."""
    return value_id.replace("_", " ").lower()


class ValueDef(BaseModel):
    """One allowed value of a choice/measure field (a topping, a size, a drink...)."""

    model_config = ConfigDict(extra="forbid")

    id: str
    label: str | None = None
    synonyms: list[str] = Field(default_factory=list)
    price: float = Field(default=0.0, ge=0)  # surcharge per unit of the item ("per extra")
    in_stock: bool = True

    @property
    def display(self) -> str:
        return self.label or default_label(self.id)


class FieldDef(BaseModel):
    """A slot of an item type, as in the seed's ``FieldDef``."""

    model_config = ConfigDict(extra="forbid")

    kind: FieldKind = "choice"
    required: bool = False
    default: Any = None  # a non-null default means "don't ask"
    question: str | None = None
    questions: dict[str, str] = Field(default_factory=dict)  # per-language questions: {"fr": "..."}
    values: list[ValueDef] = Field(default_factory=list)
    multi: bool = False  # list field (extras, toppings, styles)
    qualifiers: bool = False  # entries may carry a quantity qualifier (EXTRA, LIGHT)
    negatable: bool = False  # the customer may exclude values ("no onions")
    names_item: bool = False  # a value alone names the item ("a coke", "a latte")
    names: list[str] = Field(default_factory=list)  # nouns naming the field as a whole: "no spread" clears it
    true_words: list[str] = Field(default_factory=list)  # bool fields
    false_words: list[str] = Field(default_factory=list)
    true_label: str | None = None
    false_label: str | None = None
    units: dict[str, list[str]] = Field(default_factory=dict)  # measure fields: UNIT -> surface forms
    min_value: int | None = None  # int fields
    max_value: int | None = None
    pattern: str | None = None  # text fields: validator regex
    with_list: bool = False  # rendered in the "with ..." part of summaries
    exr: str | None = None  # dataset notation tag (TOPPING, SIZE, ...)

    @field_validator("pattern")
    @classmethod
    def _pattern_compiles(cls, value: str | None) -> str | None:
        if value is not None:
            re.compile(value)
        return value

    @model_validator(mode="after")
    def _check_values(self) -> FieldDef:
        ids = [v.id for v in self.values]
        if len(ids) != len(set(ids)):
            raise ValueError(f"duplicate value ids: {sorted(ids)}")
        if self.kind in ("choice", "measure") and not self.values:
            raise ValueError(f"a {self.kind} field needs values")
        if self.kind == "measure" and not self.units:
            raise ValueError("a measure field needs units")
        if self.default is not None:
            self.validate_value(self.default)
        if self.names and self.required:
            raise ValueError("only an optional field can be named as a whole ('no spread' clears it)")
        return self

    def value(self, value_id: str) -> ValueDef | None:
        for v in self.values:
            if v.id == value_id:
                return v
        return None

    def find_value(self, name: str) -> ValueDef | None:
        """The value an admin or a client names: its id, else its id, label or a synonym in any case."""
        exact = self.value(name)
        if exact is not None:
            return exact
        wanted = " ".join(name.split()).casefold()
        for v in self.values:
            if wanted in {n.casefold() for n in (v.id, v.label or "", *v.synonyms) if n}:
                return v
        return None

    def validate_value(self, value: Any) -> None:
        """Raise ValueError if ``value`` is not acceptable for this field."""
        if self.multi:
            if not isinstance(value, list):
                raise ValueError("expected a list")
            for entry in value:
                if isinstance(entry, dict) and "name" not in entry:
                    raise ValueError(f"expected an entry with a name, got {entry!r}")
                self._validate_scalar(entry["name"] if isinstance(entry, dict) else entry)
            return
        self._validate_scalar(value)

    def _validate_scalar(self, value: Any) -> None:
        if self.kind == "bool" and not isinstance(value, bool):
            raise ValueError(f"expected true/false, got {value!r}")
        if self.kind == "int":
            if not isinstance(value, int) or isinstance(value, bool):
                raise ValueError(f"expected an integer, got {value!r}")
            if self.min_value is not None and value < self.min_value:
                raise ValueError(f"{value} is below {self.min_value}")
            if self.max_value is not None and value > self.max_value:
                raise ValueError(f"{value} is above {self.max_value}")
        if self.kind in ("choice", "measure") and self.value(str(value)) is None:
            raise ValueError(f"{value!r} is not on the menu")
        if self.kind == "text" and self.pattern and not re.fullmatch(self.pattern, str(value)):
            raise ValueError(f"{value!r} is not valid")

    def render(self, value: Any) -> str:
        """Customer-facing rendering of a stored value."""
        if value is None or value == []:
            return ""
        if self.kind == "bool":
            return (self.true_label or "") if value else (self.false_label or "")
        if isinstance(value, list):
            return join_words([self._render_entry(e) for e in value])
        return self._render_entry(value)

    def _render_entry(self, entry: Any) -> str:
        if isinstance(entry, dict):
            base = self._render_entry(entry.get("name"))
            qual = entry.get("quantity")
            return f"{qual.lower()} {base}" if qual else base
        vdef = self.value(str(entry)) if self.values else None
        return vdef.display if vdef else str(entry)


class ItemTypeDef(BaseModel):
    """A kind of thing one can order (bagel, pizza, combo...)."""

    model_config = ConfigDict(extra="forbid")

    label: str
    names: list[str] = Field(default_factory=list)  # nouns naming the item ("pizza", "pie")
    fields: dict[str, FieldDef]
    base_price: float = Field(default=0.0, ge=0)
    size_field: str | None = None
    size_prices: dict[str, Annotated[float, Field(ge=0)]] = Field(default_factory=dict)  # replaces base_price
    available: bool = True
    min_qty: int = 1
    max_qty: int = 20
    short: str | None = None  # template naming one item: "{bagel_type} bagel"
    summary: str | None = None  # template describing it: "{size} {iced} {drink_type}"
    exr: str | None = None  # dataset notation tag (PIZZAORDER, DRINKORDER)
    role: Literal["main", "side", "drink"] | None = None  # for the next-step prompts of the conversation
    # item types that come with this one (a combo's fries): "a combo with curly fries" is then ambiguous
    includes: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _check(self) -> ItemTypeDef:
        if "quantity" not in self.fields:
            raise ValueError("every item type needs a 'quantity' field")
        if self.size_field and self.size_field not in self.fields:
            raise ValueError(f"size_field {self.size_field!r} is not a field")
        if self.min_qty < 1 or self.max_qty < self.min_qty:
            raise ValueError("invalid quantity limits")
        if self.size_field:
            unknown = set(self.size_prices) - {v.id for v in self.fields[self.size_field].values}
            if unknown:
                raise ValueError(f"size_prices for unknown sizes: {sorted(unknown)}")
        return self

    def unit_price(self, fields: dict[str, Any]) -> float:
        """Price of one unit: base (or size price) plus value surcharges."""
        price = self.base_price
        if self.size_field and fields.get(self.size_field) in self.size_prices:
            price = self.size_prices[fields[self.size_field]]
        for name, fdef in self.fields.items():
            value = fields.get(name)
            if not fdef.values or value is None or name == self.size_field:
                continue
            for entry in value if isinstance(value, list) else [value]:
                vid = entry_name(entry)
                vdef = fdef.value(str(vid))
                if vdef:
                    factor = 2.0 if isinstance(entry, dict) and entry.get("quantity") == "EXTRA" else 1.0
                    price += vdef.price * factor
        return round(price, 2)


class Menu(BaseModel):
    """A shop's menu, loaded from ``tasks_config/menus/<id>.json``."""

    model_config = ConfigDict(extra="forbid")

    # An id names the menu in URLs, task specs and Redis keys: letters, digits, '_' and '-' only.
    id: str = Field(pattern=r"^[A-Za-z0-9_-]{1,64}$")
    name: str = Field(min_length=1, max_length=200)
    currency: str = Field(default="USD", pattern=r"^[A-Z]{3}$")  # ISO 4217 code
    item_types: dict[str, ItemTypeDef]
    max_lines: int = Field(default=50, ge=1, le=1000)  # most lines (items) one order may have
    qualifiers: dict[str, list[str]] = Field(default_factory=dict)  # EXTRA -> ["extra", "more"]
    # shop vocabulary that is not an entity: words safe to ignore here ("crust", "dough" at a pizzeria)...
    fillers: list[str] = Field(default_factory=list)
    # ...and words after which a number describes the item instead of counting it ("a two topping pizza")
    count_words: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _check(self) -> Menu:
        if not self.item_types:
            raise ValueError("a menu needs at least one item type")
        for name, tdef in self.item_types.items():
            unknown = set(tdef.includes) - set(self.item_types)
            if unknown:
                raise ValueError(f"{name} includes unknown item types: {sorted(unknown)}")
        return self

    def item_type(self, name: str) -> ItemTypeDef | None:
        return self.item_types.get(name)


def join_words(parts: list[str]) -> str:
    parts = [p for p in parts if p]
    if len(parts) <= 1:
        return "".join(parts)
    return ", ".join(parts[:-1]) + " and " + parts[-1]


_REGISTRY: dict[str, Menu] = {}


@lru_cache(maxsize=64)
def _load_cached(path: str, mtime: float) -> Menu:
    try:
        raw = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise MenuError(f"cannot read menu {path}: {exc.strerror or exc}") from exc
    except json.JSONDecodeError as exc:
        raise MenuError(f"menu {path} is not valid JSON: {exc.msg} (line {exc.lineno})") from exc
    try:
        return Menu.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise MenuError(f"invalid menu {path}: {where}: {first['msg']}") from exc


def load_menu(path: str | Path) -> Menu:
    """Load and validate a menu file (cached per path and mtime) and register it by id."""
    p = Path(path).resolve()
    try:
        mtime = p.stat().st_mtime
    except OSError as exc:
        raise MenuError(f"cannot read menu {path}: {exc.strerror or exc}") from exc
    menu = _load_cached(str(p), mtime)
    _REGISTRY[menu.id] = menu
    return menu


def register_menu(menu: Menu) -> Menu:
    _REGISTRY[menu.id] = menu
    return menu


def get_menu(menu_id: str) -> Menu:
    """A registered menu, or ``tasks_config/menus/<menu_id>.json``."""
    if menu_id in _REGISTRY:
        return _REGISTRY[menu_id]
    if not re.fullmatch(r"[A-Za-z0-9_\-]+", menu_id):
        raise MenuError(f"invalid menu id {menu_id!r}")
    return load_menu(MENUS_DIR / f"{menu_id}.json")
