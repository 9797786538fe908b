"""Generalisation set: utterances written for this project in the PIZZA style (not taken from the dataset),
with the EXR expected under the dataset's conventions.

Conventions followed (as documented in docs/order_engine.md):

* every order carries NUMBER (1 when no number is said, "a"/"an" included);
* qualified toppings are ``(COMPLEX_TOPPING (QUANTITY EXTRA|LIGHT ) (TOPPING X ) )``;
* exclusions are wrapped in ``NOT`` (toppings, styles, qualified toppings);
* drinks carry DRINKTYPE plus SIZE / CONTAINERTYPE / VOLUME when said; a volume such as
  "two liter" is not a NUMBER;
* "N pizzas both/each/all with X" stays one order of N; "a large pizza and a small pizza both
  with X" gives each order X; "N pizzas, one with X and one with Y" gives N orders of one,
  each keeping the shared attributes (size, style) said before the split;
* a negation scopes over a bare "and"/"or" list: "no onions and peppers" excludes both.
"""

from __future__ import annotations

import pytest

from mojodex_core.order import parse_deterministic
from mojodex_core.order.exr import to_exr, unordered_equal


def P(*nodes: str, n: int = 1) -> str:  # noqa: N802 - reads like the notation
    return f"(PIZZAORDER (NUMBER {n} ) {' '.join(nodes)} )"


def D(*nodes: str, n: int = 1) -> str:  # noqa: N802
    return f"(DRINKORDER (NUMBER {n} ) {' '.join(nodes)} )"


def T(name: str) -> str:  # noqa: N802
    return f"(TOPPING {name} )"


def X(name: str, q: str = "EXTRA") -> str:  # noqa: N802
    return f"(COMPLEX_TOPPING (QUANTITY {q} ) (TOPPING {name} ) )"


def L(name: str) -> str:  # noqa: N802
    return X(name, "LIGHT")


def NOT(node: str) -> str:  # noqa: N802
    return f"(NOT {node} )"


def S(size: str) -> str:  # noqa: N802
    return f"(SIZE {size} )"


def ST(style: str) -> str:  # noqa: N802
    return f"(STYLE {style} )"


def DT(drink: str) -> str:  # noqa: N802
    return f"(DRINKTYPE {drink} )"


def C(container: str) -> str:  # noqa: N802
    return f"(CONTAINERTYPE {container} )"


def V(volume: str) -> str:  # noqa: N802
    return f"(VOLUME {volume} )"


CASES: list[tuple[str, list[str]]] = [
    # sizes, "pie", qualifiers
    ("can i get a party size pie with lots of cheese", [P(S("PARTY_SIZE"), X("CHEESE"))]),
    ("i'd like two personal pizzas with pepperonni and sausge please",
     [P(S("PERSONAL_SIZE"), T("PEPPERONI"), T("SAUSAGE"), n=2)]),
    ("a medium pie hold the anchovies", [P(S("MEDIUM"), NOT(T("ANCHOVIES")))]),
    ("one extra large pizza without any onions and with black olives",
     [P(S("EXTRA_LARGE"), NOT(T("ONIONS")), T("OLIVES"))]),
    ("a small pizza with mushrooms and go light on the sauce", [P(S("SMALL"), T("MUSHROOMS"), L("SAUCE"))]),
    ("a medium pizza with light cheese and heavy on the pepperoni",
     [P(S("MEDIUM"), L("CHEESE"), X("PEPPERONI"))]),
    ("can i get a small pepperoni pizza not too much cheese", [P(S("SMALL"), T("PEPPERONI"), L("CHEESE"))]),
    ("a pizza with double bacon and no tomatoes thanks", [P(X("BACON"), NOT(T("TOMATOES")))]),
    ("a large pizza with jalapenos and pinapple hold the onions",
     [P(S("LARGE"), T("JALAPENO_PEPPERS"), T("PINEAPPLE"), NOT(T("ONIONS")))]),
    ("two medium sized pies with broccoli, spinach and green peppers",
     [P(S("MEDIUM"), T("BROCCOLI"), T("SPINACH"), T("GREEN_PEPPERS"), n=2)]),
    ("one regular pizza with italian sausage", [P(S("REGULARSIZE"), T("ITALIAN_SAUSAGE"))]),
    ("ten small pizzas with pepperoni", [P(S("SMALL"), T("PEPPERONI"), n=10)]),
    ("a small pizza with a lot of mushrooms and no pepper", [P(S("SMALL"), X("MUSHROOMS"), NOT(T("PEPPERS")))]),
    ("can you do a medium pizza with chorizo and jalapeno but go easy on the cheese",
     [P(S("MEDIUM"), T("CHORIZO"), T("JALAPENO_PEPPERS"), L("CHEESE"))]),
    ("a large pizza with extra anchovies, extra olives and no cheese",
     [P(S("LARGE"), X("ANCHOVIES"), X("OLIVES"), NOT(T("CHEESE")))]),
    ("a large pie without tuna or anchovies", [P(S("LARGE"), NOT(T("TUNA")), NOT(T("ANCHOVIES")))]),
    ("a pizza with no onions and peppers", [P(NOT(T("ONIONS")), NOT(T("PEPPERS")))]),
    ("a chicken pizza without any peppers or onions", [P(T("CHICKEN"), NOT(T("PEPPERS")), NOT(T("ONIONS")))]),
    ("hi there i'd like one sausage pizza please thanks", [P(T("SAUSAGE"))]),
    ("an extra large pizza with pepperoni and extra cheese", [P(S("EXTRA_LARGE"), T("PEPPERONI"), X("CHEESE"))]),
    ("a large pizza with no cheese and no sauce", [P(S("LARGE"), NOT(T("CHEESE")), NOT(T("SAUCE")))]),
    ("a medium pizza light on the cheese with extra sausage", [P(S("MEDIUM"), L("CHEESE"), X("SAUSAGE"))]),
    ("a small sausge pizza with extra mozarella", [P(S("SMALL"), T("SAUSAGE"), X("MOZZARELLA_CHEESE"))]),
    ("three large hawaiian pizzas", [P(S("LARGE"), ST("HAWAIIAN"), n=3)]),
    ("2 large pies with ham and pineapple", [P(S("LARGE"), T("HAM"), T("PINEAPPLE"), n=2)]),
    ("a small pizza with onoins and olivs", [P(S("SMALL"), T("ONIONS"), T("OLIVES"))]),
    ("a bbq chiken pizza with mushroms", [P(T("BBQ_CHICKEN"), T("MUSHROOMS"))]),
    ("a pizza without cheese and with onions", [P(NOT(T("CHEESE")), T("ONIONS"))]),
    ("for lunch i'd like a large pizza with ham", [P(S("LARGE"), T("HAM"))]),
    ("we need six lunch size pizzas for the party", [P(S("LUNCH_SIZE"), n=6)]),
    # styles
    ("a thick crust pizza with extra pepperoni but no olives",
     [P(ST("THICK_CRUST"), X("PEPPERONI"), NOT(T("OLIVES")))]),
    ("five large pizzas with bacon and a little bit of garlic",
     [P(S("LARGE"), T("BACON"), L("GARLIC_POWDER"), n=5)]),
    ("i'll take a gluten free pizza with arugula and cherry tomatoes",
     [P(ST("GLUTEN_FREE_CRUST"), T("ARUGULA"), T("CHERRY_TOMATOES"))]),
    ("i'd like a pizza with everything on it", [P(ST("ALL_TOPPINGS"))]),
    ("please give me a lunch size pizza with feta and tomatoes",
     [P(S("LUNCH_SIZE"), T("FETA_CHEESE"), T("TOMATOES"))]),
    ("a small bbq chicken pizza with red onions", [P(S("SMALL"), T("BBQ_CHICKEN"), T("RED_ONIONS"))]),
    ("thanks, can i get three medium pies with chicken and spinach",
     [P(S("MEDIUM"), T("CHICKEN"), T("SPINACH"), n=3)]),
    # several pizzas
    ("could i have a large margherita pizza and a medium veggie pizza",
     [P(S("LARGE"), ST("MARGHERITA")), P(S("MEDIUM"), ST("VEGETARIAN"))]),
    ("one cauliflower crust pie with spinach and one stuffed crust pie with ham",
     [P(ST("CAULIFLOWER_CRUST"), T("SPINACH")), P(ST("STUFFED_CRUST"), T("HAM"))]),
    ("a large pizza with ham and pineapple and a large pizza with just cheese",
     [P(S("LARGE"), T("HAM"), T("PINEAPPLE")), P(S("LARGE"), T("CHEESE"))]),
    ("a large cheese pizza and a small one with olives", [P(S("LARGE"), T("CHEESE")), P(S("SMALL"), T("OLIVES"))]),
    ("a pizza with ham, a pizza with bacon and a pizza with tuna", [P(T("HAM")), P(T("BACON")), P(T("TUNA"))]),
    ("two pizzas with ham and two with pineapple", [P(T("HAM"), n=2), P(T("PINEAPPLE"), n=2)]),
    ("a vegan pizza with mushrooms and a keto crust pizza with chicken",
     [P(ST("VEGAN"), T("MUSHROOMS")), P(ST("KETO_CRUST"), T("CHICKEN"))]),
    ("a large with ham and a small with olives", [P(S("LARGE"), T("HAM")), P(S("SMALL"), T("OLIVES"))]),
    ("a pepperoni and a sausage pizza", [P(T("PEPPERONI")), P(T("SAUSAGE"))]),
    ("one large pizza and two small ones with bacon", [P(S("LARGE")), P(S("SMALL"), T("BACON"), n=2)]),
    ("a large pizza with ham and another with olives", [P(S("LARGE"), T("HAM")), P(T("OLIVES"))]),
    # both / each / all
    ("two large pizzas each with salami and artichokes", [P(S("LARGE"), T("SALAMI"), T("ARTICHOKES"), n=2)]),
    ("three small pies all with extra cheese", [P(S("SMALL"), X("CHEESE"), n=3)]),
    ("two pizzas both thin crust with bacon", [P(ST("THIN_CRUST"), T("BACON"), n=2)]),
    ("two large pizzas with ham and mushrooms both thin crust",
     [P(S("LARGE"), T("HAM"), T("MUSHROOMS"), ST("THIN_CRUST"), n=2)]),
    ("a large pizza and a small pizza both with ham", [P(S("LARGE"), T("HAM")), P(S("SMALL"), T("HAM"))]),
    ("a medium pizza and a large pizza each with pepperoni and onions",
     [P(S("MEDIUM"), T("PEPPERONI"), T("ONIONS")), P(S("LARGE"), T("PEPPERONI"), T("ONIONS"))]),
    ("a large pizza and a medium pizza both with thin crust and onions",
     [P(S("LARGE"), ST("THIN_CRUST"), T("ONIONS")), P(S("MEDIUM"), ST("THIN_CRUST"), T("ONIONS"))]),
    ("a large and a small pizza with ham on both", [P(S("LARGE"), T("HAM")), P(S("SMALL"), T("HAM"))]),
    ("a large pizza with ham and a small pizza with olives, both thin crust",
     [P(S("LARGE"), T("HAM"), ST("THIN_CRUST")), P(S("SMALL"), T("OLIVES"), ST("THIN_CRUST"))]),
    ("a coke and a sprite, both large", [D(S("LARGE"), DT("COKE")), D(S("LARGE"), DT("SPRITE"))]),
    # one with X and one with Y
    ("two pizzas, one with ham and one with pineapple", [P(T("HAM")), P(T("PINEAPPLE"))]),
    ("two large pizzas one with pepperoni and the other with mushrooms",
     [P(S("LARGE"), T("PEPPERONI")), P(S("LARGE"), T("MUSHROOMS"))]),
    ("three pizzas one with ham one with bacon and one with chicken", [P(T("HAM")), P(T("BACON")), P(T("CHICKEN"))]),
    ("i need two thin crust pies, one with sausage and one with no cheese",
     [P(ST("THIN_CRUST"), T("SAUSAGE")), P(ST("THIN_CRUST"), NOT(T("CHEESE")))]),
    ("five pizzas, two with ham and the rest with olives", [P(T("HAM"), n=2), P(T("OLIVES"), n=3)]),
    ("i'd like 3 pizzas: a small with ham, a medium with bacon and a large with tuna",
     [P(S("SMALL"), T("HAM")), P(S("MEDIUM"), T("BACON")), P(S("LARGE"), T("TUNA"))]),
    ("two cokes, one large and one small", [D(S("LARGE"), DT("COKE")), D(S("SMALL"), DT("COKE"))]),
    # drinks
    ("a two liter bottle of sprite", [D(V("2 LITER"), C("BOTTLE"), DT("SPRITE"))]),
    ("four 500 ml cans of coke", [D(V("500 ML"), C("CAN"), DT("COKE"), n=4)]),
    ("three pepsis and a large pizza with ham", [D(DT("PEPSI"), n=3), P(S("LARGE"), T("HAM"))]),
    ("2 large cokes and 1 small sprite", [D(S("LARGE"), DT("COKE"), n=2), D(S("SMALL"), DT("SPRITE"))]),
    ("i'd like a 2 liter of diet coke and two cans of fanta",
     [D(V("2 LITER"), DT("DIET_COKE")), D(C("CAN"), DT("FANTA"), n=2)]),
    ("i want a hawaiian pizza and two bottles of water", [P(ST("HAWAIIAN")), D(C("BOTTLE"), DT("WATER"), n=2)]),
    ("a deep dish pizza with meatballs and ricotta and a ginger ale",
     [P(ST("DEEP_DISH"), T("MEATBALLS"), T("RICOTTA_CHEESE")), D(DT("GINGER_ALE"))]),
    ("six cans of dr pepper", [D(C("CAN"), DT("DR_PEPPER"), n=6)]),
    ("a 20 fl oz bottle of mountain dew", [D(V("20 FLOZ"), C("BOTTLE"), DT("MOUNTAIN_DEW"))]),
    ("two 16.9 fl oz bottles of perrier", [D(V("16.9 FLOZ"), C("BOTTLE"), DT("PERRIER_SPARKLING_WATER"), n=2)]),
    ("i'd like a large iced tea and a medium lemon iced tea",
     [D(S("LARGE"), DT("ICE_TEA")), D(S("MEDIUM"), DT("LEMON_ICE_TEA"))]),
    ("get me eight cokes and eight sprites", [D(DT("COKE"), n=8), D(DT("SPRITE"), n=8)]),
    ("a large supreme pizza without olives and three diet pepsis",
     [P(S("LARGE"), ST("SUPREME"), NOT(T("OLIVES"))), D(DT("DIET_PEPSI"), n=3)]),
    ("twelve cans of coke zero", [D(C("CAN"), DT("COKE_ZERO"), n=12)]),
    ("i want 3 large pizzas with sausage and 2 liters of pepsi",
     [P(S("LARGE"), T("SAUSAGE"), n=3), D(V("2 LITER"), DT("PEPSI"))]),
    ("i want four medium pizzas with peperoni and two large waters",
     [P(S("MEDIUM"), T("PEPPERONI"), n=4), D(S("LARGE"), DT("WATER"), n=2)]),
    ("three 8 ounce cans of coke", [D(V("8 OZ"), C("CAN"), DT("COKE"), n=3)]),
    ("five 12 fl oz cans of ginger ale", [D(V("12 FLOZ"), C("CAN"), DT("GINGER_ALE"), n=5)]),
    ("two cokes in cans", [D(C("CAN"), DT("COKE"), n=2)]),
    ("three 2 liter bottles of pepsi", [D(V("2 LITER"), C("BOTTLE"), DT("PEPSI"), n=3)]),
    ("two 500 mls of sprite please", [D(V("500 ML"), DT("SPRITE"), n=2)]),
    ("two pespis and a 12 oz can of coke", [D(DT("PEPSI"), n=2), D(V("12 OZ"), C("CAN"), DT("COKE"))]),
    ("a medium pizza with sausage and a couple of cokes", [P(S("MEDIUM"), T("SAUSAGE")), D(DT("COKE"), n=2)]),
    ("i'll take a small pepperoni pizza and a small diet coke, oh and make the pizza thin crust",
     [P(S("SMALL"), T("PEPPERONI"), ST("THIN_CRUST")), D(S("SMALL"), DT("DIET_COKE"))]),
    ("i'd like a 7 up and a pepsi", [D(DT("SEVEN_UP")), D(DT("PEPSI"))]),
    ("can i get two 7 ups", [D(DT("SEVEN_UP"), n=2)]),
    ("three bottles of san pellegrino and a small coffee",
     [D(C("BOTTLE"), DT("PELLEGRINO_SPARKLING_WATER"), n=3), D(S("SMALL"), DT("COFFEE"))]),
    ("a large bottle of coke and a can of sprite", [D(S("LARGE"), C("BOTTLE"), DT("COKE")), D(C("CAN"), DT("SPRITE"))]),
    ("one large pizza with pepperoni, one medium with sausage and three sprites",
     [P(S("LARGE"), T("PEPPERONI")), P(S("MEDIUM"), T("SAUSAGE")), D(DT("SPRITE"), n=3)]),
    ("i'd like a new york style pizza with pepperoni and a cherry coke",
     [P(ST("NEW_YORK_STYLE"), T("PEPPERONI")), D(DT("CHERRY_COKE"))]),
]


def _exr(text: str, menu) -> str:
    return to_exr(parse_deterministic(text, menu), menu)


@pytest.mark.parametrize(("text", "orders"), CASES, ids=[c[0][:60] for c in CASES])
def test_generalisation(text, orders, pizza_menu):
    got = _exr(text, pizza_menu)
    assert unordered_equal(got, f"(ORDER {' '.join(orders)} )"), got


def test_set_size():
    assert len(CASES) >= 60
