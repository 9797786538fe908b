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
