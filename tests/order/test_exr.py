from __future__ import annotations

import pytest

from mojodex_core.order.exr import error_categories, parse_sexpr, to_exr, unordered_equal
from mojodex_core.order.parser import parse_deterministic


def test_parse_sexpr_nested():
    tree = parse_sexpr("(ORDER (PIZZAORDER (NUMBER 2 ) (NOT (TOPPING HAM ) ) ) )")
    assert tree == ("ORDER", (("PIZZAORDER", (("NUMBER", ("2",)), ("NOT", (("TOPPING", ("HAM",)),)))),))


@pytest.mark.parametrize("bad", ["", "(ORDER", "(A ) )"])
def test_parse_sexpr_rejects_malformed(bad):
    with pytest.raises(ValueError):
        parse_sexpr(bad)


def test_unordered_equality_is_multiset_based():
    a = "(ORDER (PIZZAORDER (NUMBER 1 ) (TOPPING HAM ) (TOPPING HAM ) ) (DRINKORDER (DRINKTYPE COKE ) ) )"
    b = "(ORDER (DRINKORDER (DRINKTYPE COKE ) ) (PIZZAORDER (TOPPING HAM ) (NUMBER 1 ) (TOPPING HAM ) ) )"
    c = "(ORDER (DRINKORDER (DRINKTYPE COKE ) ) (PIZZAORDER (TOPPING HAM ) (NUMBER 1 ) ) )"
    assert unordered_equal(a, b) and not unordered_equal(a, c)


def test_to_exr_conventions(pizza_menu):
    parsed = parse_deterministic(
        "two large thin crust pizzas with extra cheese and ham but no onions and three 2 liter bottles of coke",
        pizza_menu)
    expected = ("(ORDER (PIZZAORDER (NUMBER 2 ) (SIZE LARGE ) (STYLE THIN_CRUST ) "
                "(COMPLEX_TOPPING (QUANTITY EXTRA ) (TOPPING CHEESE ) ) (TOPPING HAM ) (NOT (TOPPING ONIONS ) ) ) "
                "(DRINKORDER (NUMBER 3 ) (DRINKTYPE COKE ) (VOLUME 2 LITER ) (CONTAINERTYPE BOTTLE ) ) )")
    assert unordered_equal(to_exr(parsed, pizza_menu), expected)


def test_error_categories():
    gold = "(ORDER (PIZZAORDER (NUMBER 2 ) (SIZE LARGE ) (TOPPING HAM ) ) )"
    assert error_categories(gold, gold) == []
    assert error_categories("(ORDER (PIZZAORDER (NUMBER 1 ) (SIZE LARGE ) (TOPPING HAM ) ) )", gold) == ["wrong count"]
    assert "missing topping" in error_categories("(ORDER (PIZZAORDER (NUMBER 2 ) (SIZE LARGE ) ) )", gold)
    extra = "(ORDER (PIZZAORDER (NUMBER 2 ) (SIZE LARGE ) (TOPPING HAM ) ) (DRINKORDER (NUMBER 1 ) ) )"
    assert error_categories(extra, gold) == ["extra item"]
