"""Conversations a reviewer had around whole-field negations ("no spread", "no toppings"), references and offers;
each a bug found and fixed (the other files of findings are test_user_findings*.py)."""

from __future__ import annotations

import pytest

from .conftest import Session


@pytest.mark.parametrize("text, extras", [
    ("a plain bagel, no spread, toasted", []),
    ("a plain bagel no spread toasted with lox", ["lox"]),
    ("a plain bagel, no lox, toasted", []),
])
def test_a_no_about_another_field_does_not_untoast_the_bagel(bagel_menu, text, extras):
    """ "a plain bagel, no spread, toasted" got a bagel not toasted: the "no" carried past the comma."""
    s = Session(bagel_menu)
    s.say(text)
    (_, fields), = s.lines()
    assert fields["toasted"] is True and fields["spread"] is None and fields["extras"] == extras, fields


def test_a_new_no_still_negates_the_yes_no_field(bagel_menu):
    s = Session(bagel_menu)
    s.say("a plain bagel, no spread, not toasted")
    (_, fields), = s.lines()
    assert fields["toasted"] is False and fields["spread"] is None, fields


def test_no_toppings_just_cheese_never_takes_the_cheese_off(pizza_menu):
    """ "no toppings please, just cheese" made it a "large pizza with no cheese": the opposite. Now the toppings
    go and the cheese is asked about (clearing and adding in one breath is not guessed)."""
    s = Session(pizza_menu)
    s.say("a large pizza with olives and ham")
    out = s.say("no toppings please, just cheese")
    (_, fields), = s.lines()
    assert not fields.get("excluded_toppings") and fields["toppings"] == [], fields
    assert "clarify-unparsed" in out.response_keys, out.reply


def test_no_toppings_clears_the_line_that_has_some_not_the_one_asked_about(drive_menu):
    """ "no toppings" while the combo's size was asked: the same question again, the cheeseburger kept its onion."""
    s = Session(drive_menu)
    s.say("a number 1 combo and a cheeseburger with onion")
    out = s.say("no toppings")
    assert [f.get("toppings") for _, f in s.lines()] == [[], []], s.lines()
    assert "ack-modified" in out.response_keys and "cheeseburger" in out.reply, out.reply


def test_no_extras_clears_the_bagel_that_has_some(bagel_menu):
    s = Session(bagel_menu)
    assert "sesame" in s.say("a sesame bagel and a plain bagel with tomato").reply
    out = s.say("no extras")
    assert [f.get("extras") for _, f in s.lines()] == [[], []], s.lines()
    assert "ack-modified" in out.response_keys, out.reply


def test_no_extras_clears_the_bagel_asked_about_when_it_has_some(bagel_menu):
    s = Session(bagel_menu)
    s.say("a sesame bagel with lox and a plain bagel with tomato")
    out = s.say("no extras")
    assert [f.get("extras") for _, f in s.lines()] == [[], ["tomato"]], s.lines()
    assert "ack-modified" in out.response_keys, out.reply


def test_no_spread_ahead_of_its_question_still_declines_it(bagel_menu):
    s = Session(bagel_menu)
    s.say("a plain bagel")
    s.say("no spread")
    out = s.say("toasted")
    assert "spread" in s.conv.order.items.items[0].asked and "spread" not in out.reply, out.reply


def test_no_spread_after_a_latte_offers_no_bagel(bagel_menu):
    """ "a latte", "no spread": "would you like a bagel?" - and "yes" added an empty bagel."""
    s = Session(bagel_menu)
    s.say("a latte")
    out = s.say("no spread")
    assert out.response_keys[0] == "clarify-nothing-held" and "bagel" not in out.reply, out.reply
    assert '"spread"' in out.reply and out.reply.rstrip().endswith("?"), out.reply
    s.say("hot")
    assert [t for t, _ in s.lines()] == ["coffee"], s.lines()


def test_no_toppings_with_none_on_the_order_says_so(drive_menu):
    s = Session(drive_menu)
    s.say("a cheeseburger")
    out = s.say("no toppings")
    assert out.response_keys == ["clarify-nothing-held", "ask-order-type-options"], out.reply


def test_nothing_to_take_off_is_said_in_french_too():
    from mojodex_core.order.conversation.resources import say

    assert "« spread »" in say("fr", "clarify-nothing-held", words="spread")


@pytest.mark.parametrize("text", ["no onions on either", "no onions on both"])
def test_no_onions_on_either_takes_them_off_the_one_line_that_has_them(drive_menu, text):
    """ "a cheeseburger with onion and fries", "no onions on either": "Just to be sure: pickup or delivery?" and
    the onion stayed (before the "both" change it was taken off)."""
    s = Session(drive_menu)
    s.say("a cheeseburger with onion and fries")
    out = s.say(text)
    assert s.lines()[0][1]["toppings"] == [] and "ack-modified" in out.response_keys, out.reply


@pytest.mark.parametrize("text", ["no olives on the small pizza", "no olives on the small one",
                                  "no olives on the thin crust pizza"])
def test_a_description_of_no_line_is_asked_about_not_merged_into_the_only_one(pizza_menu, text):
    """ "a large pizza with olives", "no olives on the small pizza": the only pizza became small (the thin crust
    one: its crust changed)."""
    s = Session(pizza_menu)
    s.say("a large pizza with olives")
    out = s.say(text)
    (_, fields), = s.lines()
    assert fields["size"] == "LARGE" and fields["style"] == [] and fields["toppings"] == [{"name": "OLIVES"}]
    assert out.response_key == "clarify-reference-one", out.reply
    s.say("the large one")
    (_, fields), = s.lines()
    assert fields["size"] == "LARGE" and fields["toppings"] == [] and fields["style"] == [], fields


def test_no_then_another_item_at_an_offer_drops_the_values_offered(bagel_menu):
    """ "a plain bagel", "Honey" ("would you like a coffee with honey?"), "no, a latte": a latte with honey."""
    s = Session(bagel_menu)
    s.run("a plain bagel", "Honey", "no, a latte")
    assert [(t, f.get("sweetener")) for t, f in s.lines()] == [("bagel", None), ("coffee", None)], s.lines()


def test_no_then_a_drink_at_the_large_offer_is_not_large(drive_menu):
    """ "a cheeseburger", "large" ("a large combo, fries or drink?"), "no, a coke": a large coke."""
    s = Session(drive_menu)
    s.run("a cheeseburger", "large")
    s.say("no, a coke")
    assert [(t, f.get("size")) for t, f in s.lines()][1][1] != "large", s.lines()


def test_naming_the_item_offered_still_takes_the_values(bagel_menu):
    s = Session(bagel_menu)
    s.run("a plain bagel", "Honey", "a latte")
    assert [(t, f.get("sweetener")) for t, f in s.lines()] == [("bagel", None), ("coffee", "honey")], s.lines()


@pytest.mark.parametrize("text", ["no ice in either", "no ice in both"])
def test_no_ice_in_both_is_both(drive_menu, text):
    """ "a large coke and a small coke", "no ice in either": "which one?" though the customer said both."""
    s = Session(drive_menu)
    s.say("a large coke and a small coke")
    out = s.say(text)
    assert [f["ice"] for _, f in s.lines()] == [False, False] and "ack-modified" in out.response_keys, out.reply


def test_no_ice_in_the_small_one_is_the_only_small_drink(drive_menu):
    s = Session(drive_menu)
    s.say("a large coke and a small sprite")
    out = s.say("no ice in the small one")
    assert [f["ice"] for _, f in s.lines()] == [True, False] and "ack-modified" in out.response_keys, out.reply


@pytest.mark.parametrize("text, word", [("no ice in the large coke", "ice"), ("a large coke with no blorp", "blorp")])
def test_a_negated_unknown_word_is_said_back_once(pizza_menu, text, word):
    """ "no ice in the large coke" at the pizzeria said 'we don't have "ice no ice"': the unknown word and its
    negation were both reported. The word is said back once."""
    s = Session(pizza_menu)
    s.run("a large coke", "pickup")
    out = s.say(text)
    assert out.response_key == "clarify-unparsed" and f'we don\'t have "{word}"' in out.reply, out.reply
    assert out.parsed["unparsed"] == [word], out.parsed


@pytest.mark.parametrize("answer", ["yes, a coke with no ice", "a coke no ice"])
def test_a_no_about_a_value_does_not_decline_the_large_offer(drive_menu, answer):
    """ "a cheeseburger", "large" ("a large combo, fries or drink?"), "yes, a coke with no ice": a medium coke
    - any "no" in the answer was read as declining the offer."""
    s = Session(drive_menu)
    s.run("a cheeseburger", "large")
    s.say(answer)
    (_, drink), = [(t, f) for t, f in s.lines() if t != "burger" and "ice" in f]
    assert drink.get("size") == "large" and drink["ice"] is False, s.lines()


@pytest.mark.parametrize("answer", ["a latte no sugar", "a latte with no milk"])
def test_a_no_about_a_value_does_not_decline_the_honey_offer(bagel_menu, answer):
    s = Session(bagel_menu)
    s.run("a plain bagel", "Honey", answer)
    assert [(t, f.get("sweetener")) for t, f in s.lines()] == [("bagel", None), ("coffee", "honey")], s.lines()


@pytest.mark.parametrize("answer", ["nope, a latte", "no but a latte please", "no thanks, a latte"])
def test_a_leading_no_still_declines_the_offer(bagel_menu, answer):
    s = Session(bagel_menu)
    s.run("a plain bagel", "Honey", answer)
    assert [(t, f.get("sweetener")) for t, f in s.lines()] == [("bagel", None), ("coffee", None)], s.lines()


def test_two_described_lines_in_one_breath_each_get_their_change(pizza_menu):
    """ "a large pizza with olives and a small pizza with ham", "no olives on the large one and no ham on the small
    one": the small pizza became large - the second clause was read as the description."""
    s = Session(pizza_menu)
    s.say("a large pizza with olives and a small pizza with ham")
    s.say("no olives on the large one and no ham on the small one")
    assert [(f["size"], f["toppings"]) for _, f in s.lines()] == [("LARGE", []), ("SMALL", [])], s.lines()


def test_the_small_one_then_the_large_one_never_resizes_a_drink(drive_menu):
    """ "no ice in the small one, extra ice in the large one": the large coke became a small coke with no ice."""
    s = Session(drive_menu)
    s.say("a large coke and a small sprite")
    s.say("no ice in the small one, extra ice in the large one")
    assert [(f["drink_type"], f["size"], f["ice"]) for _, f in s.lines()] == [
        ("coke", "large", True), ("sprite", "small", False)], s.lines()


@pytest.mark.parametrize("text, large, small", [
    ("no olives on the large one and add mushrooms", [{"name": "MUSHROOMS"}], [{"name": "HAM"}]),
    ("no olives on the large one, extra cheese", [{"name": "CHEESE", "quantity": "EXTRA"}], [{"name": "HAM"}]),
    ("no ham on the small one and make it thin crust", [{"name": "OLIVES"}], []),
])
def test_a_change_after_the_described_line_is_its_change(pizza_menu, text, large, small):
    """ "no olives on the large one and add mushrooms": "which one?", and "the large one" dropped the mushrooms."""
    s = Session(pizza_menu)
    s.say("a large pizza with olives and a small pizza with ham")
    out = s.say(text)
    assert [(f["size"], f["toppings"]) for _, f in s.lines()] == [("LARGE", large), ("SMALL", small)], s.lines()
    assert "ack-modified" in out.response_keys, out.reply


def test_no_spread_on_the_sesame_one_and_add_lox(bagel_menu):
    s = Session(bagel_menu)
    s.say("a sesame bagel with cream cheese and a plain bagel with butter")
    s.say("no spread on the sesame one and add lox")
    assert [(f["spread"], f["extras"]) for _, f in s.lines()] == [(None, ["lox"]), ("butter", [])], s.lines()


def test_one_line_it_could_be_is_asked_about_and_yes_takes_it(pizza_menu):
    """ "a large pizza with olives", "no olives on the small pizza": "which one do you mean: 1) a large pizza with
    olives?" - and "yes" applied nothing."""
    s = Session(pizza_menu)
    s.say("a large pizza with olives")
    out = s.say("no olives on the small pizza")
    assert out.response_keys == ["clarify-reference-one"] and "your large pizza with olives?" in out.reply, out.reply
    s.say("yes")
    (_, fields), = s.lines()
    assert fields["size"] == "LARGE" and fields["toppings"] == [], fields


def test_no_to_the_one_line_it_could_be_changes_nothing(pizza_menu):
    s = Session(pizza_menu)
    s.run("a large pizza with olives", "no olives on the small pizza", "no")
    (_, fields), = s.lines()
    assert fields["toppings"] == [{"name": "OLIVES"}], fields


def test_the_one_line_question_is_said_in_french_too():
    from mojodex_core.order.conversation.resources import say

    assert "grande pizza" in say("fr", "clarify-reference-one", item="grande pizza")



_LARGE_OLIVES_SMALL_HAM = "a large pizza with olives and a small pizza with ham"


@pytest.mark.parametrize("text, large, small", [
    ("the large one thin crust, the small one with mushrooms",
     (["THIN_CRUST"], [{"name": "OLIVES"}]), ([], [{"name": "HAM"}, {"name": "MUSHROOMS"}])),
    ("the large one thin crust and the small one with mushrooms",
     (["THIN_CRUST"], [{"name": "OLIVES"}]), ([], [{"name": "HAM"}, {"name": "MUSHROOMS"}])),
    ("make the large one thin crust and the small one with mushrooms",
     (["THIN_CRUST"], [{"name": "OLIVES"}]), ([], [{"name": "HAM"}, {"name": "MUSHROOMS"}])),
    ("the large one with no olives and the small one with no ham", ([], []), ([], [])),
    ("the small one with mushrooms and no olives on the large one",
     ([], []), ([], [{"name": "HAM"}, {"name": "MUSHROOMS"}])),
    ("the small one thin crust, extra cheese on the large one",
     ([], [{"name": "OLIVES"}, {"name": "CHEESE", "quantity": "EXTRA"}]), (["THIN_CRUST"], [{"name": "HAM"}])),
])
def test_two_leading_the_one_descriptions_never_resize_the_second_line(pizza_menu, text, large, small):
    """ "the large one thin crust, the small one with mushrooms": the small pizza became a large one - the first
    "the large one" was no description, so "large thin crust" was applied to the line "small" found. Each line
    gets its own change, or "which one?" - never a silent change."""
    s = Session(pizza_menu)
    s.say(_LARGE_OLIVES_SMALL_HAM)
    out = s.say(text)
    lines = [(f["size"], f["style"], f["toppings"]) for _, f in s.lines()]
    assert lines == [("LARGE",) + large, ("SMALL",) + small], (out.reply, lines)


def test_the_sesame_one_toasted_and_the_plain_one_not_toasted(bagel_menu):
    """The plain bagel became a sesame bagel."""
    s = Session(bagel_menu)
    s.say("a sesame bagel with cream cheese and a plain bagel with butter")
    out = s.say("the sesame one toasted and the plain one not toasted")
    lines = [(f["bagel_type"], f["spread"], f.get("toasted")) for _, f in s.lines()]
    assert lines == [("sesame", "cream cheese", True), ("plain", "butter", False)], (out.reply, lines)


def test_a_removal_of_no_line_never_asks_did_you_mean_the_only_one(pizza_menu):
    """ "remove the small pizza" with only a large pizza: "did you mean your large pizza with olives?" - and "yes"
    removed nothing and said nothing (the proposal had no candidates). The "which one" wording, as before."""
    s = Session(pizza_menu)
    s.say("a large pizza with olives")
    out = s.say("remove the small pizza")
    assert "clarify-reference-one" not in out.response_keys, out.reply
    assert "clarify-reference" in out.response_keys, out.reply


def test_actually_no_olives_on_the_small_pizza_then_yes_takes_them_off(pizza_menu):
    """ "actually no olives on the small pizza" with only a large pizza: "did you mean your large pizza with
    olives?", "yes" - and the olives stayed: "actually no" was read as a correction, the "no" lost."""
    s = Session(pizza_menu)
    s.say("a large pizza with olives")
    s.say("actually no olives on the small pizza")
    s.say("yes")
    (_, fields), = s.lines()
    assert fields["size"] == "LARGE" and fields["toppings"] == [], fields


def test_discourse_words_are_the_conversation_language_s_whole_phrases(pizza_menu):
    """The discourse words of every language were merged and split into words: "en fait" made a French "en"
    (also a pronoun) a discourse word of an English conversation; "just" and "wait" carry meaning."""
    from mojodex_core.order.llm_parser import _discourse_words, needs_llm
    from mojodex_core.order.parser import parse_deterministic

    assert "en fait" in _discourse_words("fr") and "en" not in _discourse_words("fr")
    assert not {"en", "fait", "en fait", "just", "wait"} & _discourse_words("en")
    s = Session(pizza_menu)
    s.say("a large pizza with olives")
    parsed = parse_deterministic("actually no olives on the small pizza", pizza_menu, s.conv.order)
    assert parsed.reference is not None and not needs_llm(parsed, lang="en"), parsed
    parsed = parsed.model_copy(update={"unparsed": [*parsed.unparsed, "en"]})
    assert needs_llm(parsed, lang="en") and not needs_llm(parsed.model_copy(update={"unparsed": ["en fait"]}),
                                                          lang="fr")


@pytest.mark.parametrize("text", ["no olives on the large, thin crust pizza",
                                  "no olives on the large uh thin crust pizza"])
def test_a_comma_or_filler_inside_the_description_does_not_end_it(pizza_menu, text):
    """ "no olives on the large, thin crust pizza": "which one?" - the description ended at the comma."""
    s = Session(pizza_menu)
    s.say("a large pizza with olives and a large thin crust pizza with olives")
    s.say(text)
    assert [f["toppings"] for _, f in s.lines()] == [[{"name": "OLIVES"}], []], s.lines()


@pytest.mark.parametrize("text, drink", [
    ("the large one and the small one both diet coke", "DIET_COKE"),
    ("the large one and the small one both sprite", "SPRITE"),
])
def test_both_after_two_the_one_descriptions_is_never_dropped_silently(pizza_menu, text, drink):
    """A reviewer found it: grouping "both" by the kinds "large" and "small" share (a pizza, a drink) dropped
    "diet coke" without a word ("Just to be sure: pickup or delivery?"). Asked, as before that grouping."""
    s = Session(pizza_menu)
    s.say("a large coke and a small coke")
    before = s.lines()
    out = s.say(text)
    asked = out.response_keys == ["clarify-reference"] and s.lines() == before
    assert asked or [f["drink_type"] for _, f in s.lines()] == [drink, drink], (out.reply, s.lines())


def test_remove_the_bacon_from_all_of_them_takes_it_off_every_bagel(bagel_menu):
    """A reviewer found it: "all of them" is an "everything" phrase too, so the removal asked to cancel the
    whole order, where "from both" took the bacon off."""
    s = Session(bagel_menu)
    s.say("a plain bagel with bacon and a sesame bagel with bacon")
    out = s.say("remove the bacon from all of them")
    assert [(f["bagel_type"], f["extras"], f["excluded_extras"]) for _, f in s.lines()] == [
        ("plain", [], ["bacon"]), ("sesame", [], ["bacon"])], (out.reply, s.lines())
    assert "ack-modified" in out.response_keys, out.reply


@pytest.mark.parametrize("text", ["remove all of them", "remove everything"])
def test_removing_everything_still_asks_to_cancel_the_order(bagel_menu, text):
    """ "everything" is also a bagel: only a removal naming nothing else of the menu is the whole order."""
    s = Session(bagel_menu)
    s.say("a plain bagel with bacon and a sesame bagel with bacon")
    out = s.say(text)
    assert s.conv.order.items.active() and out.reply.startswith("Just to be sure: cancel the whole order"), out.reply
