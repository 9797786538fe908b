"""Conversations about two pizzas already ordered, a large and a small one: changes said of both, or of one
named by its size; each a gap found and fixed (the other files of findings are test_user_findings*.py)."""

from __future__ import annotations

import pytest

from .conftest import Session

_LARGE_OLIVES_SMALL_HAM = "a large pizza with olives and a small pizza with ham"


@pytest.mark.parametrize("text", ["make the small one a large", "make the small one large",
                                  "change the small one to a large", "make the small pizza a large",
                                  "large on the small one"])
def test_make_the_small_one_a_large_resizes_it(pizza_menu, text):
    """ "make the small one a large" asked "pickup or delivery?" again and changed nothing: "small" (which line)
    and "large" (the change) were read as two sizes for one pizza."""
    s = Session(pizza_menu)
    s.say(_LARGE_OLIVES_SMALL_HAM)
    out = s.say(text)
    assert [(f["size"], f["toppings"]) for _, f in s.lines()] == [
        ("LARGE", [{"name": "OLIVES"}]), ("LARGE", [{"name": "HAM"}])], out.reply
    assert out.response_keys[0] == "ack-modified" and "large pizza with ham" in out.reply, out.reply
    assert "clarify-unparsed" not in out.response_keys, out.reply  # "large on the small one": "small" said back


def test_make_the_small_one_a_large_with_two_small_ones_asks_and_resizes_the_one_named(pizza_menu):
    s = Session(pizza_menu)
    s.say("a small pizza with olives and a small pizza with ham")
    out = s.say("make the small one a large")
    assert out.response_keys == ["clarify-reference"], out.reply
    s.say("the second one")
    assert [f["size"] for _, f in s.lines()] == ["SMALL", "LARGE"], s.outcomes[-1].reply


@pytest.mark.parametrize("text, large, small", [
    ("the large one and the small one both thin crust", (["THIN_CRUST"], []), (["THIN_CRUST"], [])),
    ("the large one and the small one, both thin crust", (["THIN_CRUST"], []), (["THIN_CRUST"], [])),
    ("the large one and the small one both with mushrooms", ([], [{"name": "MUSHROOMS"}]),
     ([], [{"name": "MUSHROOMS"}])),
])
def test_the_large_one_and_the_small_one_both_thin_crust_changes_both(pizza_menu, text, large, small):
    """Only the small pizza was made thin crust: "large" and "small" fit a pizza and a drink alike, so "both"
    found no kind of item to group the two descriptions by. The value said after "both" tells which."""
    s = Session(pizza_menu)
    s.say(_LARGE_OLIVES_SMALL_HAM)
    out = s.say(text)
    lines = [(f["size"], f["style"], f["toppings"]) for _, f in s.lines()]
    assert lines == [("LARGE", large[0], [{"name": "OLIVES"}, *large[1]]),
                     ("SMALL", small[0], [{"name": "HAM"}, *small[1]])], (out.reply, lines)
    assert out.response_keys[0] == "ack-modified", out.reply


@pytest.mark.parametrize("text", ["the large one and the small one both thin crust",
                                  "the large one thin crust and the small one thin crust"])
def test_both_thin_crust_over_a_pizza_and_a_coke_asks_about_the_small_one(pizza_menu, text):
    """ "the small one" is a coke, which takes no crust: the large pizza is changed and the rest asked about, as
    when each was said on its own."""
    s = Session(pizza_menu)
    s.say("a large pizza and a small coke")
    out = s.say(text)
    assert [f.get("style") for _, f in s.lines()] == [["THIN_CRUST"], None], out.reply
    assert "clarify-reference-one" in out.response_keys, out.reply


def test_the_large_one_and_the_small_one_both_bottles_is_grouped_by_the_drink(pizza_menu):
    """The value after "both" picks the kind of item, a drink here; an item's name ("both diet coke") stays asked
    about (test_user_findings_parse.py: the reverted grouping dropped it without a word)."""
    s = Session(pizza_menu)
    s.say("a large coke and a small coke")
    out = s.say("the large one and the small one both bottles")
    assert [(f["size"], f["container"]) for _, f in s.lines()] == [("LARGE", "BOTTLE"), ("SMALL", "BOTTLE")], out.reply
