from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from mojodex_core.order.cli import llm_settings_from_env, order
from tests.support.scripted_llm import Reply

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


# --- --mode auto|llm: an LLMProvider built from MOJODEX_LLM_* environment variables

NO_LLM_ENV = {"MOJODEX_LLM_BASE_URL": None, "MOJODEX_LLM_API_KEY": None, "OPENAI_API_KEY": None,
              "MOJODEX_LLM_MODEL": None}
GOOD = {"new_items": [{"item_type": "pizza", "fields": {"size": "LARGE", "toppings": [{"name": "HAM"}]}}],
        "confidence": 0.9}


def _env(llm) -> dict:
    return {**NO_LLM_ENV, "MOJODEX_LLM_BASE_URL": llm.base_url, "MOJODEX_LLM_MODEL": "scripted"}


@pytest.mark.parametrize("mode", ["auto", "llm"])
def test_modes_needing_an_llm_exit_2_without_one(mode):
    res = CliRunner().invoke(order, ["parse", "--mode", mode, "--menu", str(MENUS / "pizzeria.json"), "a pizza"],
                             env=NO_LLM_ENV)
    assert res.exit_code == 2
    lines = res.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: no LLM configured")


def test_bad_base_url_exits_2():
    env = {**NO_LLM_ENV, "MOJODEX_LLM_BASE_URL": "localhost:8080"}
    res = CliRunner().invoke(order, ["parse", "--mode", "llm", "--menu", str(MENUS / "pizzeria.json"), "a pizza"],
                             env=env)
    assert res.exit_code == 2 and "http(s) URL" in res.output


def test_deterministic_mode_needs_no_llm():
    res = CliRunner().invoke(order, ["parse", "--mode", "deterministic", "--menu", str(MENUS / "pizzeria.json"),
                                     "a coke"], env=NO_LLM_ENV)
    assert res.exit_code == 0 and json.loads(res.output)["new_items"][0]["fields"] == {"drink_type": "COKE"}


def test_llm_mode_against_the_scripted_server(llm):
    llm.script(Reply(json=GOOD))
    res = CliRunner().invoke(order, ["parse", "--mode", "llm", "--exr", "--menu", str(MENUS / "pizzeria.json"),
                                     "a big ham pie"], env=_env(llm))
    assert res.exit_code == 0, res.output
    body = llm.last_request
    assert body["model"] == "scripted" and body["response_format"]["json_schema"]["name"] == "ParsedInput"
    assert body["messages"][-1]["content"] == "a big ham pie"
    *json_lines, exr_line = res.output.strip().splitlines()
    assert json.loads("\n".join(json_lines))["new_items"][0]["fields"]["size"] == "LARGE"
    assert exr_line == "(ORDER (PIZZAORDER (NUMBER 1 ) (SIZE LARGE ) (TOPPING HAM ) ) )"


def test_llm_mode_invalid_output_twice_exits_1(llm):
    llm.script(Reply("nope"), Reply("still nope"))
    res = CliRunner().invoke(order, ["parse", "--mode", "llm", "--menu", str(MENUS / "pizzeria.json"), "x"],
                             env=_env(llm))
    assert res.exit_code == 1 and len(llm.requests) == 2
    assert res.output.strip().startswith("error: order_parse: the model returned an invalid ParsedInput twice")


def test_auto_mode_only_calls_the_llm_when_unsure(llm):
    args = ["parse", "--mode", "auto", "--menu", str(MENUS / "pizzeria.json")]
    res = CliRunner().invoke(order, [*args, "two large pepperoni pizzas"], env=_env(llm))
    assert res.exit_code == 0 and llm.requests == []
    llm.script(Reply(json=GOOD))
    res = CliRunner().invoke(order, [*args, "a large calzone-ish thing with ham"], env=_env(llm))
    assert res.exit_code == 0 and len(llm.requests) == 1
    assert json.loads(res.output)["confidence"] == 0.9


def test_api_key_alone_configures_the_official_endpoint():
    settings = llm_settings_from_env({"OPENAI_API_KEY": "sk-test"})
    assert (settings.base_url, settings.api_key, settings.model) == (None, "sk-test", "gpt-4o-mini")
    settings = llm_settings_from_env({"MOJODEX_LLM_API_KEY": "a", "OPENAI_API_KEY": "b", "MOJODEX_LLM_MODEL": "m"})
    assert (settings.api_key, settings.model) == ("a", "m")
    assert llm_settings_from_env({}) is None
