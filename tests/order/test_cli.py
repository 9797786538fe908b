from __future__ import annotations

import json

from click.testing import CliRunner

from mojodex_core.order.cli import order

from .conftest import MENUS


def test_parse_prints_parsed_input_json():
    res = CliRunner().invoke(order, ["parse", "--menu", str(MENUS / "pizzeria.json"),
                                     "two large pepperoni pizzas and a diet coke"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    assert [i["item_type"] for i in data["new_items"]] == ["pizza", "drink"]
    assert data["new_items"][0]["fields"] == {"quantity": 2, "size": "LARGE", "toppings": [{"name": "PEPPERONI"}]}


def test_parse_with_exr_flag():
    res = CliRunner().invoke(order, ["parse", "--exr", "--menu", str(MENUS / "pizzeria.json"), "a coke"])
    assert res.exit_code == 0
    assert res.output.strip().splitlines()[-1] == "(ORDER (DRINKORDER (DRINKTYPE COKE ) (NUMBER 1 ) ) )"


def test_bad_menu_path_exits_2(tmp_path):
    res = CliRunner().invoke(order, ["parse", "--menu", str(tmp_path / "missing.json"), "a pizza"])
    assert res.exit_code == 2
    assert res.output.strip().startswith("error: cannot read menu") and len(res.output.strip().splitlines()) == 1


def test_invalid_menu_exits_2(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"id": "x", "name": "X", "item_types": {"pizza": {"label": "pizza", "fields": {}}}}))
    res = CliRunner().invoke(order, ["parse", "--menu", str(bad), "a pizza"])
    assert res.exit_code == 2 and "invalid menu" in res.output and "quantity" in res.output
    bad.write_text("{not json")
    res = CliRunner().invoke(order, ["parse", "--menu", str(bad), "a pizza"])
    assert res.exit_code == 2 and "not valid JSON" in res.output
