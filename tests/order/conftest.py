from __future__ import annotations

from pathlib import Path

import pytest

from mojodex_core.order.menu import Menu, load_menu

MENUS = Path(__file__).resolve().parents[2] / "tasks_config" / "menus"


@pytest.fixture(scope="session")
def bagel_menu() -> Menu:
    return load_menu(MENUS / "bagel_shop.json")


@pytest.fixture(scope="session")
def pizza_menu() -> Menu:
    return load_menu(MENUS / "pizzeria.json")


@pytest.fixture(scope="session")
def drive_menu() -> Menu:
    return load_menu(MENUS / "drive_thru.json")
