"""Menus of order tasks: files under tasks_config/ and menus uploaded with PUT /menu, with stock overrides.

A task spec's ``menu`` is a path under tasks_config/ ("menus/bagel_shop.json") or the id of an
uploaded menu ("florist"). Whatever its source, a menu is known by its ``id`` to the stock API
(PUT /menu_availability), whose overrides are applied on top of it with ``mark_unavailable``.
Resolved menus are cached per (source version, overrides), so a turn costs two small reads.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from sqlalchemy import bindparam, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session as DbSession

from mojodex_core.db.models import MenuStock, OrderSession, StoredMenu
from mojodex_core.order.menu import Menu, MenuError, entry_name, load_menu
from mojodex_core.task_spec.fields import is_menu_id


class MenuInvalid(ValueError):
    """A menu JSON that the Menu model rejects; ``errors`` lists {path, rule}."""

    def __init__(self, errors: list[dict[str, str]]) -> None:
        super().__init__("invalid menu: " + "; ".join(f"{e['path']}: {e['rule']}" for e in errors))
        self.errors = errors


class MenuNotFound(LookupError):
    pass


class StockError(ValueError):
    """PUT /menu_availability named an item type, field or value the menu does not have."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


def validate_menu(data: Any) -> Menu:
    if not isinstance(data, dict):
        raise MenuInvalid([{"path": "<root>", "rule": "must be a JSON object (a menu)"}])
    try:
        return Menu.model_validate(data)
    except ValidationError as exc:
        errors = []
        for error in exc.errors():
            path = ".".join(str(p) for p in error["loc"]) or "<root>"
            message = error["msg"].removeprefix("Value error, ")
            errors.append({"path": path, "rule": message})
        raise MenuInvalid(errors) from exc
    except ValueError as exc:  # a validator's own error (e.g. a regex that does not compile)
        raise MenuInvalid([{"path": "<root>", "rule": str(exc)}]) from exc


@dataclass(frozen=True)
class StockOverride:
    item_type: str
    field: str | None
    value: str | None
    in_stock: bool


def _names(menu: Menu, o: StockOverride) -> bool:
    """Whether the menu still has what the override names (an upload may have dropped it since)."""
    tdef = menu.item_types.get(o.item_type)
    if tdef is None or o.field is None:
        return tdef is not None
    fdef = tdef.fields.get(o.field)
    return fdef is not None and fdef.value(str(o.value)) is not None


def _apply(menu: Menu, overrides: tuple[StockOverride, ...]) -> Menu:
    from mojodex_core.order.conversation import mark_unavailable

    for o in overrides:
        if _names(menu, o):
            menu = mark_unavailable(menu, o.item_type, o.field, o.value, o.in_stock)
    return menu


_OVERRIDES = (
    select(MenuStock.item_type, MenuStock.field, MenuStock.value, MenuStock.in_stock)
    .where(MenuStock.menu_id == bindparam("b_menu"))
    .order_by(MenuStock.menu_stock_pk)
)


class MenuCatalog:
    """Resolves menu references to Menu objects, stock overrides applied."""

    def __init__(self, tasks_config_dir: Path) -> None:
        self.tasks_config_dir = Path(tasks_config_dir)
        self._lock = threading.Lock()
        self._stored: dict[str, tuple[datetime | None, Menu]] = {}
        self._applied: dict[tuple, tuple[Menu, Menu]] = {}

    # --- sources
    def _file_menu(self, path: str) -> Menu:
        try:
            return load_menu(self.tasks_config_dir / path)
        except MenuError as exc:
            raise MenuNotFound(str(exc)) from exc

    def _stored_menu(self, db: DbSession, menu_id: str) -> Menu | None:
        updated_at = db.scalar(select(StoredMenu.updated_at).where(StoredMenu.menu_id == menu_id))
        if updated_at is None:
            return None
        cached = self._stored.get(menu_id)
        if cached is not None and cached[0] == updated_at:
            return cached[1]
        row = db.get(StoredMenu, menu_id)
        menu = Menu.model_validate(row.menu)
        with self._lock:
            self._stored[menu_id] = (updated_at, menu)
        return menu

    def base_menu(self, db: DbSession, menu_ref: str) -> Menu:
        """The menu a spec names, without stock overrides."""
        if is_menu_id(menu_ref):
            menu = self._stored_menu(db, menu_ref)
            if menu is None:
                raise MenuNotFound(f"no menu with id {menu_ref!r}")
            return menu
        return self._file_menu(menu_ref)

    def menu_by_id(self, db: DbSession, menu_id: str) -> Menu:
        """A menu by its id: uploaded first, else a shipped file tasks_config/menus/<id>.json."""
        if not is_menu_id(menu_id):
            raise MenuNotFound(f"no menu with id {menu_id!r}")
        menu = self._stored_menu(db, menu_id)
        if menu is not None:
            return menu
        path = self.tasks_config_dir / "menus" / f"{menu_id}.json"
        if path.is_file():
            menu = self._file_menu(f"menus/{menu_id}.json")
            if menu.id == menu_id:
                return menu
        raise MenuNotFound(f"no menu with id {menu_id!r}")

    # --- stock
    @staticmethod
    def overrides(db: DbSession, menu_id: str) -> tuple[StockOverride, ...]:
        rows = db.execute(_OVERRIDES, {"b_menu": menu_id}).all()
        return tuple(StockOverride(r.item_type, r.field or None, r.value or None, r.in_stock) for r in rows)

    def with_stock(self, db: DbSession, menu: Menu) -> Menu:
        overrides = self.overrides(db, menu.id)
        if not overrides:
            return menu
        key = (menu.id, overrides)
        cached = self._applied.get(key)
        if cached is not None and cached[0] is menu:  # same base object: not a replaced menu
            return cached[1]
        applied = _apply(menu, overrides)
        with self._lock:
            if len(self._applied) > 256:
                self._applied.clear()
            self._applied[key] = (menu, applied)
        return applied

    def resolve(self, db: DbSession, menu_ref: str) -> Menu:
        return self.with_stock(db, self.base_menu(db, menu_ref))


def store_menu(db: DbSession, menu: Menu) -> bool:
    """Creates or replaces an uploaded menu; returns whether it was created. The stock recorded for what the
    new menu no longer has is dropped with it (the same name uploaded again later is in stock)."""
    row = db.get(StoredMenu, menu.id)
    created = row is None
    if created:
        row = StoredMenu(menu_id=menu.id)
        db.add(row)
    row.menu = menu.model_dump(mode="json")
    for stock in db.scalars(select(MenuStock).where(MenuStock.menu_id == menu.id)):
        if not _names(menu, StockOverride(stock.item_type, stock.field or None, stock.value or None, stock.in_stock)):
            db.delete(stock)
    db.flush()
    return created


def set_stock(
    db: DbSession, menu: Menu, item_type: str, field: str | None, value: str | None, in_stock: bool
) -> None:
    """Records an item type (or a value of one of its fields) out of / back in stock."""
    value = check_stock_item(menu, item_type, field, value)
    key = {"menu_id": menu.id, "item_type": item_type, "field": field or "", "value": value or ""}
    found = select(MenuStock).filter_by(**key)
    row = db.scalar(found)
    if row is None:
        try:
            with db.begin_nested():
                db.add(MenuStock(**key, in_stock=in_stock))
        except IntegrityError:  # recorded meanwhile by another request: update that one
            pass
        row = db.scalar(found)
    row.in_stock = in_stock
    db.flush()


def check_stock_item(menu: Menu, item_type: object, field: object, value: object) -> str | None:
    """What a stock change or an out_of_stock event names must be on the menu: an item type, or a
    value of one of its fields (StockError naming the offending key otherwise). Returns the value's id:
    a value may be named by its id, label or a synonym in any case ("pepperoni" for "PEPPERONI")."""
    for key, given in (("item_type", item_type), ("field", field), ("value", value)):
        if given is not None and not isinstance(given, str):
            raise StockError(key, f"{key} must be a string")
    item = menu.item_type(item_type)
    if item is None:
        raise StockError("item_type", f"menu {menu.id!r} has no item type {item_type!r}")
    if value is not None and field is None:
        raise StockError("field", "field is required with value")
    if field is not None:
        fdef = item.fields.get(field)
        if fdef is None:
            raise StockError("field", f"item type {item_type!r} has no field {field!r}")
        if value is None:
            raise StockError("value", "value is required with field")
        found = fdef.find_value(value)
        if found is None:
            raise StockError("value", f"field {field!r} of {item_type!r} has no value {value!r}")
        return found.id
    return None


def missing_in_use(menu: Menu, items: Iterable[dict[str, Any]]) -> set[str]:
    """What ordered ``items`` (stored item dicts) use and ``menu`` no longer has or takes: an item type ("drink"),
    a field holding a value, or taking it no more ("pizza.toppings": dropped, made single, made text), a value of
    a menu field ("pizza.toppings MUSHROOMS"), a quantity past the type's limits ("burger.quantity 3"). Pure."""
    missing: set[str] = set()
    for item in items:
        if item.get("status") == "skipped":
            continue
        tdef = menu.item_types.get(item.get("item_type"))
        if tdef is None:
            missing.add(str(item.get("item_type")))
            continue
        for name, current in (item.get("fields") or {}).items():
            if name.startswith("excluded_"):
                continue  # "no onions": nothing charged or ticketed; moot if the menu dropped onions
            fdef = tdef.fields.get(name)
            if fdef is None:
                if current not in (None, [], ""):  # a whole field dropped while an order holds a value of it
                    missing.add(f"{item.get('item_type')}.{name}")
                continue
            if current in (None, [], ""):
                continue
            if fdef.kind in ("choice", "measure"):
                gone = [entry_name(entry) for entry in (current if isinstance(current, list) else [current])]
                gone = [v for v in gone if v is not None and fdef.value(str(v)) is None]
                missing.update(f"{item.get('item_type')}.{name} {v}" for v in gone)
                if gone:
                    continue
            try:  # the value as the new field takes it (a list field made single, a choice made text...)
                if isinstance(current, list) != fdef.multi:
                    raise ValueError("a list where one value is taken, or the reverse")
                fdef.validate_value(current)
            except (ValueError, TypeError, KeyError):
                missing.add(f"{item.get('item_type')}.{name}")
            if name == "quantity" and isinstance(current, int) and not tdef.min_qty <= current <= tdef.max_qty:
                missing.add(f"{item.get('item_type')}.quantity {current}")
    return missing


def in_use_missing_from(db: DbSession, menu: Menu) -> set[str]:
    """What the live (not Idle) orders taken on this menu's id use and ``menu`` lacks: a replacement must keep
    it (mark it out of stock instead), or those orders would be repriced and ticketed with what is gone."""
    rows = db.scalars(
        select(OrderSession.conversation).where(OrderSession.menu_id == menu.id, OrderSession.state != "Idle")
    )
    orders = ((conversation or {}).get("order") or {} for conversation in rows)
    return missing_in_use(menu, (item for order in orders for item in order.get("items", {}).get("items", [])))
