"""Conversations a tester had with the shipped menus, each one a bug found and fixed."""

from __future__ import annotations

import pytest

from mojodex_core.order.tokens import extract_contacts

from .conftest import Session


@pytest.mark.parametrize("text, contact", [
    ("555-1234", "555-1234"),
    ("5551234", "5551234"),
    ("call me on 555 1234 please", "555 1234"),
    ("555-123-4567", "555-123-4567"),
    ("+33 6 12 34 56 78", "+33 6 12 34 56 78"),
])
def test_phone_numbers_of_seven_digits_and_more_are_contacts(text, contact):
    assert extract_contacts(text)[1] == [contact]


@pytest.mark.parametrize("text", ["2 bagels", "12 34", "a number 2 combo", "123456", "1234567890123456"])
def test_short_numbers_and_quantities_are_not_phone_numbers(text):
    assert extract_contacts(text) == (text, [])


def test_a_seven_digit_phone_number_is_taken_as_the_contact(bagel_menu):
    s = Session(bagel_menu)
    s.run("a plain bagel toasted with butter", "no thanks, that is all", "pickup", "Ana")
    out = s.say("555-1234")
    assert s.conv.order.customer_info.contact == "555-1234"
    assert out.response_key == "ask-payment"


@pytest.mark.parametrize("text", ["à emporter", "emporter", "en livraison"])
def test_french_pickup_or_delivery_said_early_is_the_order_type_not_an_item(pizza_menu, text):
    s = Session(pizza_menu, "fr")
    s.say("a large margherita pizza")
    out = s.say(text)
    assert out.response_key != "clarify-unparsed" and "emporter »" not in out.reply
    assert s.conv.order.delivery_method.order_type == ("delivery" if "livraison" in text else "pickup")
    assert [it.item_type for _, it in s.conv.order.items.active()] == ["pizza"]


def test_french_pickup_as_the_first_words(pizza_menu):
    s = Session(pizza_menu, "fr")
    out = s.say("à emporter")
    assert s.conv.order.delivery_method.order_type == "pickup" and out.state_after == "Ordering"
    assert not s.conv.order.items.active()


def test_stock_values_are_named_by_id_label_or_synonym_in_any_case(pizza_menu):
    from mojodex_core.order_runtime.menus import StockError, check_stock_item

    for name in ("PEPPERONI", "pepperoni", "Pepperoni"):
        assert check_stock_item(pizza_menu, "pizza", "toppings", name) == "PEPPERONI"
    assert check_stock_item(pizza_menu, "pizza", "toppings", "mozz") == "MOZZARELLA_CHEESE"
    assert check_stock_item(pizza_menu, "pizza", None, None) is None
    with pytest.raises(StockError):
        check_stock_item(pizza_menu, "pizza", "toppings", "pepper oni")



def test_cancel_the_coke_removes_the_only_diet_coke(pizza_menu):
    s = Session(pizza_menu)
    s.say("a large pepperoni pizza and a diet coke")
    out = s.say("cancel the coke")
    assert out.response_key != "clarify-reference"
    assert [it.item_type for _, it in s.conv.order.items.active()] == ["pizza"]


def test_cancel_the_coke_asks_which_one_when_two_cokes_could_be_meant(pizza_menu):
    s = Session(pizza_menu)
    s.say("a large pepperoni pizza, a diet coke and a coke zero")
    assert s.say("cancel the coke").response_key == "clarify-reference"
    assert len(s.conv.order.items.active()) == 3


def test_cancel_the_coke_with_only_a_sprite_removes_nothing(pizza_menu):
    s = Session(pizza_menu)
    s.say("a large pepperoni pizza and a sprite")
    s.say("cancel the coke")
    assert [it.item_type for _, it in s.conv.order.items.active()] == ["pizza", "drink"]


def test_a_removal_left_unanswered_is_not_applied_by_a_later_yes(drive_menu):
    """'remove the second one' (2 cheeseburgers) asked for a yes; the customer asked about fries instead, went
    on, and three turns later a 'yes' to another question removed the cheeseburgers."""
    s = Session(drive_menu)
    s.run("a number 2 combo, large, with a coke", "and two cheeseburgers")
    assert s.say("remove the second one").response_key == "confirm-unsafe-change"
    s.run("what sizes do fries come in?", "that's it", "pickup")
    assert s.conv.pending_change is None
    s.say("yes")
    assert [it.item_type for _, it in s.conv.order.items.active()] == ["combo", "burger"]


def test_a_removal_answered_at_once_is_applied(drive_menu):
    s = Session(drive_menu)
    s.run("a number 2 combo, large, with a coke", "and two cheeseburgers", "remove the second one")
    s.say("yes")
    assert [it.item_type for _, it in s.conv.order.items.active()] == ["combo"]


@pytest.mark.parametrize("text", ["bonjour", "salut", "bonsoir"])
def test_a_french_greeting_is_greeted_not_refused_nor_read_as_an_item(bagel_menu, text):
    """"bonjour" got "Désolé, je n'ai pas compris « bonjour »"; "salut" became a salt bagel (a fuzzy match)."""
    s = Session(bagel_menu, "fr")
    out = s.say(text)
    assert out.response_keys == ["ask-order"] and not out.errors
    assert not s.conv.order.items.active()


def test_a_greeting_with_an_order_still_takes_the_order(bagel_menu):
    s = Session(bagel_menu, "fr")
    assert s.say("hello").response_keys == ["ask-order"]
    s.say("bonjour, a plain bagel")
    assert [it.fields["bagel_type"] for _, it in s.conv.order.items.active()] == ["plain"]


@pytest.mark.parametrize("language, note", [("en", "We're out of large today."),
                                            ("fr", "Nous n'avons plus de large aujourd'hui.")])
def test_a_menu_question_says_which_of_its_values_are_out_of_stock(language, note):
    """The drive-thru asks "Would you like the combo medium or large?" from the menu's text: with large out
    of stock, the question still offered it, and the customer who took it was told it was gone."""
    from mojodex_core.order.conversation import mark_unavailable
    from mojodex_core.order.menu import get_menu

    menu = mark_unavailable(get_menu("drive_thru"), "combo", "size", "large", False)
    s = Session(menu, language)
    out = s.say("a number 1 combo with a coke")
    assert out.reply.endswith(note), out.reply
    assert s.say("medium").conversation.order.items.items[0].fields["size"] == "medium"


def test_a_menu_question_with_everything_in_stock_is_the_menus_text(pizza_menu):
    out = Session(pizza_menu).say("a margherita pizza")
    assert out.reply == "What size would you like the pizza - small, medium, large or extra large?"


def test_switching_to_delivery_at_the_read_back_asks_a_payment_delivery_takes(pizza_menu):
    """A tester switched to delivery after choosing to pay in store: the ticket said "for delivery to 5 Elm
    Street / Payment: in store", a payment the delivery question refuses."""
    s = Session(pizza_menu)
    out = s.run("a small cheese pizza", "pickup", "that's it", "Ana", "555-1234", "in store")
    assert out.response_key == "confirm-summary"
    s.say("actually make it delivery")
    out = s.say("5 Elm Street")
    assert s.conv.order.payment.method is None and out.response_key == "ask-payment"
    out = s.say("cash")
    assert out.response_key == "confirm-summary" and "for delivery to 5 Elm Street" in out.reply
    assert s.conv.order.payment.method == "cash_delivery"


def test_switching_to_pickup_drops_the_address_and_the_cash_on_delivery(pizza_menu):
    """The reverse: the ticket said "for pickup / Payment: cash on delivery" and still carried the address,
    sent to the POS."""
    s = Session(pizza_menu)
    s.run("a small cheese pizza", "delivery", "5 Elm Street", "that's it", "Ana", "555-1234", "cash")
    out = s.say("actually I'll pick it up")
    order = s.conv.order
    assert (order.delivery_method.address, order.payment.method, order.checkout.confirmed) == (None, None, False)
    assert out.response_key == "ask-payment"
    out = s.say("in store")
    assert out.response_key == "confirm-summary" and "for pickup" in out.reply


def test_an_out_of_stock_default_is_asked_not_applied():
    """A tester marked the drive-thru's medium drinks out of stock: "a coke" was taken as a medium coke, charged,
    without a word; the size is the menu's default."""
    from mojodex_core.order.conversation import mark_unavailable
    from mojodex_core.order.menu import get_menu

    menu = mark_unavailable(get_menu("drive_thru"), "drink", "size", "medium", False)
    s = Session(menu)
    out = s.say("a coke")
    assert s.conv.order.items.items[0].fields["size"] is None
    assert out.reply.endswith("What size drink - small, medium or large? We're out of medium today."), out.reply
    s.say("large")
    assert s.conv.order.items.items[0].fields["size"] == "large"


def test_an_order_has_at_most_the_menus_max_lines(pizza_menu):
    """A tester sent "a large pizza" 300 times in one message: 300 lines, $4,050, with no limit."""
    menu = pizza_menu.model_copy(update={"max_lines": 3})
    s = Session(menu)
    out = s.say("a large cheese pizza, " * 5)
    assert len(s.conv.order.items.active()) == 3
    assert out.reply.count("at most 3 lines") == 1, out.reply
    out = s.say("and a coke")
    assert len(s.conv.order.items.active()) == 3 and "at most 3 lines" in out.reply
    assert pizza_menu.max_lines == 50


@pytest.mark.parametrize("menu, order, removal", [
    ("pizzeria", "a small pepperoni pizza and a large cheese pizza", "remove the pepperoni pizza"),
    ("pizzeria", "a small pepperoni pizza and a large cheese pizza", "remove the small pizza"),
    ("pizzeria", "a small pepperoni pizza and a large cheese pizza", "take off the first pizza"),
    ("pizzeria", "a small pizza with sausage and a large pizza with ham", "remove the pizza with sausage"),
    ("bagel_shop", "a sesame bagel toasted with butter and a plain bagel toasted with butter",
     "remove the sesame bagel"),
    ("bagel_shop", "a sesame bagel toasted with butter and a plain bagel toasted with butter",
     "remove the first bagel"),
    ("drive_thru", "a cheeseburger and a bacon burger", "remove the first burger"),
])
def test_removing_one_described_item_removes_only_that_item(menu, order, removal):
    """"remove the pepperoni pizza" (a small pepperoni and a large cheese pizza ordered) asked "cancel the whole
    order?" and "yes" removed both: each word of the description ("pepperoni", "pizza") was taken for a
    reference of its own, and the parser read "remove the pepperoni" as taking the topping off."""
    from mojodex_core.order.menu import get_menu

    s = Session(get_menu(menu))
    s.say(order)
    kept = [(it.item_type, it.fields) for _, it in s.conv.order.items.active()][1:]
    out = s.say(removal)
    assert out.conversation.pending_change is None and out.response_keys[0] == "ack-cancelled-rest", out.reply
    assert [(it.item_type, it.fields) for _, it in s.conv.order.items.active()] == kept


def test_removing_an_ambiguous_item_and_another_asks_which_one(pizza_menu):
    s = Session(pizza_menu)
    s.say("a small pizza with sausage and a large pizza with ham and a coke")
    assert s.say("remove the pizza and the coke").response_key == "clarify-reference"
    assert len(s.conv.order.items.active()) == 3


def test_removing_a_described_item_and_another_removes_those_two(pizza_menu):
    s = Session(pizza_menu)
    s.say("a small pizza with sausage and a large pizza with ham and a coke")
    assert s.say("remove the large pizza, and the coke").response_key == "confirm-unsafe-change"
    s.say("yes")
    assert [it.fields["size"] for _, it in s.conv.order.items.active()] == ["SMALL"]


def test_make_the_shake_large_changes_the_chocolate_shake(drive_menu):
    """"a chocolate shake", then "make the shake large": "Got it, a large vanilla shake" - a second line, the
    menu's "shake" being the vanilla milkshake, and the chocolate shake unchanged."""
    s = Session(drive_menu)
    s.say("a chocolate shake")
    out = s.say("make the shake large")
    assert out.response_keys[0] == "ack-modified", out.reply
    assert [(it.fields["drink_type"], it.fields["size"]) for _, it in s.conv.order.items.active()] == [
        ("chocolate shake", "large")]


def test_make_the_coke_large_keeps_the_diet_coke(drive_menu):
    s = Session(drive_menu)
    s.say("a diet coke")
    s.say("make the coke large")
    assert [(it.fields["drink_type"], it.fields["size"]) for _, it in s.conv.order.items.active()] == [
        ("diet coke", "large")]


def test_make_the_first_one_a_diet_coke_changes_the_combos_drink(drive_menu):
    """"make the first one a diet coke" (two combos) added a diet coke of its own, charged, and the combo kept
    its coke."""
    s = Session(drive_menu)
    s.say("a number 1 medium with a coke and a number 2 large with a sprite")
    s.say("make the first one a diet coke")
    assert [(it.item_type, it.fields.get("combo_drink")) for _, it in s.conv.order.items.active()] == [
        ("combo", "diet coke"), ("combo", "sprite")]


def test_make_the_first_one_a_drink_it_cannot_take_adds_nothing(drive_menu):
    s = Session(drive_menu)
    s.say("a cheeseburger and a coke")
    s.say("make the first one a sprite")
    assert [it.item_type for _, it in s.conv.order.items.active()] == ["burger", "drink"]


@pytest.mark.parametrize("answer, name", [("Olive", "Olive"), ("Basil", "Basil"), ("my name is Olive", "Olive")])
def test_a_name_that_is_a_topping_answers_the_name_question(pizza_menu, answer, name):
    """Asked for a name, "Olive", "Basil" or "my name is Olive" added the topping to the pizza and went back from
    Confirming to Ordering."""
    s = Session(pizza_menu)
    out = s.run("a large pepperoni pizza", "pickup", "no that's all")
    assert out.response_key == "confirm-missing" and s.conv.order.pending.task == "customer_name"
    out = s.say(answer)
    assert out.state_after == "Confirming" and s.conv.order.customer_info.name == name
    assert s.conv.order.items.items[0].fields["toppings"] == [{"name": "PEPPERONI"}]


def test_a_name_said_with_an_order_keeps_the_order(pizza_menu):
    s = Session(pizza_menu)
    s.run("a large pepperoni pizza", "pickup", "no that's all")
    s.say("my name is Sam and a coke please")
    assert s.conv.order.customer_info.name == "Sam"
    assert [it.item_type for _, it in s.conv.order.items.active()] == ["pizza", "drink"]


@pytest.mark.parametrize("menu, question, key, words", [
    ("drive_thru", "do you have onion rings?", "menu-not-on-menu", "we don't have onion rings"),
    ("pizzeria", "do you have garlic bread?", "menu-not-on-menu", "we don't have garlic bread"),
    ("drive_thru", "what combos do you have?", "menu-kinds", "number 1 classic burger"),
    ("pizzeria", "what pizzas do you have?", "menu-options", "toppings: cheese"),
    ("drive_thru", "what sizes do combos come in?", "menu-field-values-question", "size options are medium and large"),
])
def test_menu_questions_answer_what_was_asked(menu, question, key, words):
    """"do you have onion rings?" was answered "Yes, we have onion today." (a burger topping), "garlic bread"
    "we have garlic", and "what combos / pizzas do you have?" "Yes, we have combo today." instead of a list."""
    from mojodex_core.order.menu import get_menu

    out = Session(get_menu(menu)).say(question)
    assert out.response_keys[0] == key and words in out.reply, out.reply
    assert not out.conversation.order.items.active()


@pytest.mark.parametrize("menu, question, order", [
    ("bagel_shop", "how much is a large latte?", "a large iced latte"),
    ("drive_thru", "how much is a large number 4?", "a large number 4 with a coke"),
    ("pizzeria", "how much is a large pepperoni pizza?", "a large pepperoni pizza"),
    ("pizzeria", "how much is a large coke?", "a large coke"),
])
def test_a_price_quote_is_what_the_order_charges(menu, question, order):
    """"how much is a large latte?" said $3.75 (the large coffee) and the order charged $4.75 (the latte's
    surcharge); a large number 4 $10.75 vs $12.75, a large pepperoni pizza $13.50 vs $15.00."""
    from mojodex_core.order.menu import get_menu

    s = Session(get_menu(menu))
    out = s.say(question)
    assert out.response_keys[0] == "menu-price", out.reply
    s.say(order)
    assert f"${s.conv.order.total():.2f}." in out.reply, (out.reply, s.conv.order.total())


def test_an_unclear_answer_to_the_payment_question_asks_it_again(pizza_menu):
    """At the payment question "hmm" got "Sorry, I didn't understand that. What would you like to order?" (the
    payment question not asked again) and counted as an off-topic strike: "hmm", "blorp", "the weather is nice"
    ended the session and the order was lost."""
    s = Session(pizza_menu)
    out = s.run("a large pepperoni pizza", "pickup", "no that's all", "Ana", "555-1234")
    assert out.response_key == "ask-payment"
    out = s.say("hmm")
    assert out.response_keys == ["ask-payment-options"] and not out.response_key.startswith("off-topic")
    s.run("blorp", "the weather is nice")
    assert s.state != "Idle" and not s.outcomes[-1].ended
    s.say("card")
    assert s.conv.order.payment.method == "card_link"


def test_gibberish_with_no_question_pending_is_still_off_topic(pizza_menu):
    s = Session(pizza_menu)
    assert s.say("blorp").response_key == "off-topic-not-understandable-1"


def test_an_item_type_out_of_stock_is_replaced_by_one_of_its_role_only(pizza_menu):
    """A tester marked the pizzeria's drinks out of stock: "Sorry, we're out of drink right now. Would you like a
    pizza instead?" - the only other item type, a main."""
    from mojodex_core.order.conversation import mark_unavailable

    s = Session(pizza_menu)
    s.say("a large cheese pizza and a coke")
    s.menu = mark_unavailable(pizza_menu, "drink", None, None, False)
    out = s.event("out_of_stock", item_type="drink")
    assert "pizza" not in out.reply and out.reply.startswith("Sorry, we're out of drink"), out.reply
    s.say("no")
    assert [(it.item_type, it.status) for it in s.conv.order.items.items] == [("pizza", "complete"),
                                                                             ("drink", "skipped")]


@pytest.mark.parametrize("text, reply", [
    ("do you have olives available?", "Yes, we have olives today."),
    ("do you have pepperoni left?", "Yes, we have pepperoni today."),
    ("is there any ham left today?", "Yes, we have ham today."),
    ("do you have garlic bread available today?", "Sorry, we don't have garlic bread - we have pizza and drink."),
])
def test_a_stock_questions_own_words_are_not_an_unknown_item(pizza_menu, text, reply):
    """A reviewer found "do you have olives available?" answered "Sorry, we don't have olives available": the
    question's own word, unknown to the menu, was read as naming an unknown item."""
    from mojodex_core.order.conversation.menu_answers import answer_menu_question

    assert answer_menu_question(text, pizza_menu, "en")[0][1] == reply


def test_removing_an_item_named_with_a_value_containing_and(bagel_menu):
    """A reviewer found "remove the coffee with half and half" asking which coffee since the removal's parts
    were split at every "and": "half and half" is one menu name."""
    s = Session(bagel_menu)
    s.say("a large coffee with half and half and a small coffee with oat milk")
    s.say("remove the coffee with half and half")
    assert [(it.fields.get("size"), it.status) for it in s.conv.order.items.items] == [
        ("large", "skipped"), ("small", "in_progress")]


@pytest.mark.parametrize("answer, change", [("thin crust", ("style", ["THIN_CRUST"])), ("large", ("size", "LARGE"))])
def test_a_size_or_style_at_the_name_question_is_still_an_order_change(pizza_menu, answer, change):
    """A reviewer found 785f1ab took any value naming no item as the name: "thin crust" became "Thin Crust"."""
    s = Session(pizza_menu)
    s.run("a small cheese pizza", "pickup", "that's it")
    s.say(answer)
    field, value = change
    assert s.conv.order.customer_info.name is None
    assert s.conv.order.items.items[0].fields[field] == value


def test_a_quote_for_several_items_is_their_total(pizza_menu):
    """A reviewer found "how much are two large pepperoni pizzas?" quoted $15.00, one pizza's price, next to
    "2 x"; the order would charge $30.00."""
    from mojodex_core.order.conversation.menu_answers import answer_menu_question

    (key, text), = answer_menu_question("how much are two large pepperoni pizzas?", pizza_menu, "en")
    assert key == "menu-price" and text.endswith("$30.00."), text


@pytest.mark.parametrize("text", ["remove the olives", "I don't want olives on my pizza", "no olives please"])
def test_taking_a_topping_off_goes_to_the_one_pizza_that_has_it(pizza_menu, text):
    """A reviewer found that with two pizzas, one with olives, taking the olives off changed nothing and said
    nothing: the reference fitted both pizzas. The one holding the value is the one meant."""
    s = Session(pizza_menu)
    s.say("a large pizza with pepperoni and olives and a small cheese pizza")
    s.say(text)
    assert [it.fields["toppings"] for it in s.conv.order.items.items] == [[{"name": "PEPPERONI"}],
                                                                         [{"name": "CHEESE"}]]


def test_taking_off_a_topping_both_pizzas_have_is_not_guessed(pizza_menu):
    s = Session(pizza_menu)
    s.say("a large pizza with olives and a small pizza with olives")
    s.say("remove the olives")
    assert [it.fields["toppings"] for it in s.conv.order.items.items] == [[{"name": "OLIVES"}]] * 2


def test_the_french_not_on_menu_answer_needs_no_elision(pizza_menu):
    """A reviewer found "nous n'avons pas de olives" (French elides: "d'olives"): the text now quotes the name."""
    from mojodex_core.order.conversation.menu_answers import answer_menu_question

    (_key, text), = answer_menu_question("avez-vous des onion rings ?", pizza_menu, "fr")
    assert "« onion rings » n'est pas sur notre carte" in text and "pas de " not in text, text


@pytest.mark.parametrize("menu_id, text, price", [
    ("pizzeria", "how much is a small pizza with ham and a coke?", "$12.50"),
    ("pizzeria", "how much are three small pizzas with ham and a 2 liter coke?", "$35.25"),
    ("drive_thru", "how much for two cheeseburgers and a large fries?", "$15.50"),
])
def test_a_quote_for_several_items_is_what_the_order_would_charge(menu_id, text, price):
    """A tester asked the price of two items at once: the answer named one item at its bare price ($9.00 where
    the order charges $12.50)."""
    from mojodex_core.order.conversation.menu_answers import answer_menu_question
    from mojodex_core.order.menu import get_menu

    (key, reply), = answer_menu_question(text, get_menu(menu_id), "en")
    assert key == "menu-price-total" and reply.endswith(f"come to {price}."), reply


def _toppings(s: Session) -> list[str]:
    return [t["name"] for _, it in s.conv.order.items.active() for t in it.fields.get("toppings") or []]


def test_remove_two_toppings_takes_both_off(pizza_menu):
    """"remove the ham and olives" took the ham off and added olives again (the removal covered one value)."""
    s = Session(pizza_menu)
    s.say("a large pizza with ham, olives and mushrooms")
    s.say("remove the ham and olives")
    assert _toppings(s) == ["MUSHROOMS"]


@pytest.mark.parametrize("text", ["take the olives off", "leave the olives off", "take the olives out",
                                  "can you take the olives off please", "leave the olives out"])
def test_a_removal_said_around_its_object_removes(pizza_menu, text):
    """"take the olives off" on a large ham pizza answered "No problem, large pizza with ham and olives": "take"
    and "off" were fillers, so the olives were added."""
    s = Session(pizza_menu)
    s.say("a large pizza with ham")
    s.say(text)
    assert _toppings(s) == ["HAM"]
    s = Session(pizza_menu)
    s.say("a large pizza with ham and olives")
    s.say(text)
    assert _toppings(s) == ["HAM"]


def test_take_the_bacon_off_a_bagel(bagel_menu):
    """"take the bacon off" was read as unclear at the bagel shop."""
    s = Session(bagel_menu)
    s.say("a plain bagel toasted with bacon")
    out = s.say("take the bacon off")
    assert out.response_keys[0] == "ack-modified" and "with no bacon" in out.reply, out.reply  # since d4f0e4a
    assert [it.fields["extras"] for _, it in s.conv.order.items.active()] == [[]]


def test_take_the_ham_and_olives_off(pizza_menu):
    s = Session(pizza_menu)
    s.say("a large pizza with ham, olives and mushrooms")
    s.say("take the ham and olives off")
    assert _toppings(s) == ["MUSHROOMS"]


@pytest.mark.parametrize("text", ["change the address to 9 Pine Street", "deliver to 9 Pine Street instead",
                                  "my address is 9 Pine Street, thanks"])
def test_a_new_address_at_the_read_back_changes_the_address_only(pizza_menu, text):
    """At the read-back, "change the address to 9 Pine Street" answered "No problem, 9 x coke" and kept the old
    address; "deliver to 9 Pine Street instead" made 9 cokes and the address "9 Pine Street instead"."""
    s = Session(pizza_menu)
    s.run("a large ham pizza and a coke", "delivery", "22 Oak Avenue", "that's it", "Bob", "555-1234", "cash")
    out = s.say(text)
    assert s.conv.order.delivery_method.address.street == "9 Pine Street"
    assert [it.fields["quantity"] for _, it in s.conv.order.items.active()] == [1, 1]
    assert out.response_keys == ["confirm-summary"] and "9 Pine Street," in out.reply


@pytest.mark.parametrize("answer, left", [("the first one", ["SPRITE", "COKE"]), ("the second one", ["COKE", "SPRITE"]),
                                          ("2", ["COKE", "SPRITE"])])  # numbered as "which one?" lists the cokes
def test_remove_the_coke_with_two_cokes_asks_which_and_the_answer_removes_it(pizza_menu, answer, left):
    """"a coke, a sprite and a coke" then "remove the coke": the bot ignored it and asked pickup or delivery
    again; "the second one" then got a pattern hint."""
    s = Session(pizza_menu)
    s.run("a large ham pizza", "a coke, a sprite and a coke")
    assert s.say("remove the coke").response_key == "clarify-reference"
    assert len(s.conv.order.items.active()) == 4
    s.say(answer)
    assert [it.fields.get("drink_type") for _, it in s.conv.order.items.active()] == [None] + left


@pytest.mark.parametrize("text", ["remove the ham", "no ham on the first one"])
def test_a_confident_change_while_clarifying_is_applied(pizza_menu, text):
    """A tester found "remove the ham" said in Clarifying lost: the parse was a confident exclusion, but taking a
    topping off left no trace in the update's diff, so the turn made "no progress" (STILL_UNCLEAR, a pattern
    hint) and the ham stayed. In Ordering the same change was applied without being acknowledged."""
    s = Session(pizza_menu)
    s.run("a large pizza with ham and a small pizza with bacon", "take the bacon and the olives away please")
    assert s.state == "Clarifying"
    out = s.say(text)
    assert (out.transition, out.state_after) == ("USER_CLARIFIES_OK", "Ordering")
    assert s.conv.order.items.items[0].fields["toppings"] == []
    assert out.response_keys[0] == "ack-modified" and "no ham" in out.reply, out.reply


def test_a_topping_taken_off_is_in_the_diff(pizza_menu):
    from mojodex_core.order.parser import parse_deterministic
    from mojodex_core.order.state import update_state
    from mojodex_core.order.tree import new_order

    tree, _ = update_state(new_order(pizza_menu.id), parse_deterministic("a large ham pizza", pizza_menu,
                                                                         new_order(pizza_menu.id)), pizza_menu)
    _, diff = update_state(tree, parse_deterministic("no ham", pizza_menu, tree), pizza_menu)
    assert [(op.path, op.new) for op in diff.ops if op.op == "set" and op.path.startswith("items")] == [
        ("items[0].toppings", []), ("items[0].excluded_toppings", [{"name": "HAM"}])]


def test_hesitations_at_the_anything_else_prompt_never_end_the_session(drive_menu):
    """A tester said "hmm", "umm", "errr" at "Would you like something else?": three off-topic strikes, the
    third ended the session ("I can only take orders... Goodbye!") and the order was lost. Only the questions of
    the order (tree.pending) took an unclear answer as an answer; the next-step prompt is a question too."""
    s = Session(drive_menu)
    out = s.run("a cheeseburger", "pickup")
    assert out.response_key.startswith("next-step")
    for text in ("hmm", "umm", "errr", "hmmmm"):
        out = s.say(text)
        assert out.intent == "order_entry" and not out.response_key.startswith("off-topic"), (text, out.reply)
        assert not out.ended and s.state != "Idle"
    assert s.conv.off_topic_count == 0 and len(s.conv.order.items.active()) == 1
    s.say("a coke")
    assert [it.item_type for _, it in s.conv.order.items.active()][-1] == "drink"


def test_gibberish_at_the_anything_else_prompt_is_asked_again(drive_menu):
    s = Session(drive_menu)
    s.run("a cheeseburger", "pickup")
    out = s.say("blorp")
    assert out.intent == "order_entry" and out.state_after == "Clarifying" and s.conv.off_topic_count == 0


def test_off_topic_at_the_anything_else_prompt_still_strikes(drive_menu):
    s = Session(drive_menu)
    s.run("a cheeseburger", "pickup")
    out = s.say("what's the weather like today?")
    assert out.response_key == "off-topic-simply-unrelated-1" and s.conv.off_topic_count == 1



@pytest.mark.parametrize("language, text", [("en", "umm"), ("en", "errr"), ("fr", "euh")])
def test_a_hesitation_is_never_the_name(pizza_menu, language, text):
    """A tester answered the name question "hmm" (asked again), then "umm": the order's name became "Umm"."""
    s = Session(pizza_menu, language)
    out = s.run("a large pepperoni pizza", "pickup", "that's it")
    assert out.response_key == "confirm-missing"
    s.run("hmm", text)
    assert s.conv.order.customer_info.name is None


@pytest.mark.parametrize("hesitations", [("hmm", "umm"), ("hmm", "umm", "errr")])
def test_the_name_given_after_its_clarification_goes_on_to_the_payment(pizza_menu, hesitations):
    """A tester hesitated at the name question until it went to Clarifying, then gave the name: the flow went
    back to Ordering's "Would you like something else?" (seed row 9), "555-1234" was then no contact and "card"
    no payment. The answer to a question Confirming asked resumes Confirming."""
    s = Session(pizza_menu)
    s.run("a large pepperoni pizza", "pickup", "that's it", *hesitations)
    assert s.state in ("Clarifying", "Thinking")
    out = s.say("Ana")
    assert (out.transition, out.state_after) == ("INFO_GIVEN", "Confirming")
    assert s.conv.order.customer_info.name == "Ana" and s.conv.last_question == "customer_contact"
    out = s.run("555-1234", "card")
    assert out.response_key == "confirm-summary" and s.conv.order.payment.method == "card_link"
    assert s.say("yes").closed


def test_the_pattern_hint_for_the_name_is_a_name(pizza_menu):
    s = Session(pizza_menu)
    out = s.run("a large pepperoni pizza", "pickup", "that's it", "hmm", "umm", "errr")
    assert out.response_key == "pattern-hint" and '"Sam"' in out.reply, out.reply


def test_changes_to_the_items_are_progress_for_the_question_loop(pizza_menu):
    """A tester added toppings at "anything else?": the third time the bot said "I don't have anything yet - want
    to start with pizza...?" with a pizza in the order; turns that changed items counted as "without progress"."""
    s = Session(pizza_menu)
    s.run("a large pepperoni pizza", "pickup")
    for text in ("add olives", "add ham", "add mushrooms"):
        out = s.say(text)
        assert out.response_key.startswith("next-step") and "anything yet" not in out.reply, (text, out.reply)
    assert s.conv.question_count == 1


@pytest.mark.parametrize("text, drink", [("a sprite instead", "SPRITE"), ("pepsi", "PEPSI")])
def test_another_drink_named_after_an_out_of_stock_offer_replaces_the_coke(pizza_menu, text, drink):
    """A tester's coke went out of stock, the bot offered diet coke and the customer said "a sprite instead": a new
    sprite line, and the emptied coke line stayed, priced $2.00 and asked again ("What would you like to
    drink?" - "sprite": two sprites). The named drink goes on the line that lost its coke."""
    from mojodex_core.order.conversation import mark_unavailable

    s = Session(pizza_menu)
    s.say("a large ham pizza and a coke")
    s.menu = mark_unavailable(pizza_menu, "drink", "drink_type", "COKE", False)
    assert s.event("out_of_stock", item_type="drink", field="drink_type", value="COKE").response_key == (
        "oos-alternative")
    out = s.say(text)
    items = [(it.item_type, it.fields.get("drink_type")) for _, it in s.conv.order.items.active()]
    assert items == [("pizza", None), ("drink", drink)]
    assert out.response_keys[-1] == "ask-order-type", out.reply
    assert s.conv.order.total() == 17.0


@pytest.mark.parametrize("menu_id, text, item_type", [
    ("bagel_shop", "i'll take the plain bagel and get the bacon off", "bagel"),
    ("pizzeria", "i'll take the large pepperoni pizza and i'll be out front", "pizza"),
])
def test_take_ordering_an_item_is_no_split_removal(menu_id, text, item_type):
    """A reviewer found 1dafe10's scan from "take" ran over "and", "i'll", "get" to a later "off"/"out": the
    order was read as a removal ("there's no plain bacon bagel in your order") and nothing was ordered."""
    from mojodex_core.order.menu import get_menu

    s = Session(get_menu(menu_id))
    s.say(text)
    assert [it.item_type for _, it in s.conv.order.items.active()] == [item_type]


def test_what_follows_a_split_removal_is_not_taken_off(pizza_menu):
    """A reviewer found "take the ham off and give me olives" excluded the olives too: the particle did not end
    what was taken off."""
    s = Session(pizza_menu)
    s.say("a large pizza with ham")
    s.say("take the ham off and give me olives")
    (_, pizza), = s.conv.order.items.active()
    assert (pizza.fields["toppings"], pizza.fields.get("excluded_toppings")) == ([{"name": "OLIVES"}],
                                                                                 [{"name": "HAM"}])


def test_taking_a_topping_off_two_pizzas_never_removes_a_pizza(pizza_menu):
    """A reviewer found e9c8698 read "remove the ham", with two ham pizzas, as the removal of a pizza: "which one
    do you mean?", "the first one" - and the large pizza was gone, not its ham."""
    s = Session(pizza_menu)
    s.say("a large pizza with ham and a small pizza with ham")
    s.say("remove the ham")
    s.say("the first one")
    assert [it.fields["size"] for _, it in s.conv.order.items.active()] == ["LARGE", "SMALL"]


def test_asking_the_restaurants_address_changes_nothing(pizza_menu):
    """A reviewer found ea698dd read "what's the address of the restaurant?" on a pickup order as a delivery
    address: the order switched to delivery "to the restaurant?"."""
    s = Session(pizza_menu)
    s.run("a large ham pizza and a coke", "pickup")
    s.say("what's the address of the restaurant?")
    assert (s.conv.order.delivery_method.order_type, s.conv.order.delivery_method.address) == ("pickup", None)


@pytest.mark.parametrize("text, added", [("my address is 9 Pine Street, and add 2 cokes", 2),
                                         ("deliver to 9 Pine Street and a coke", 1)])
def test_an_order_said_after_an_address_is_taken(pizza_menu, text, added):
    """A reviewer found ea698dd kept "9 Pine Street, and add 2 cokes" as the address: the cokes were lost."""
    s = Session(pizza_menu)
    s.run("a large ham pizza", "delivery", "22 Oak Avenue")
    s.say(text)
    assert s.conv.order.delivery_method.address.street == "9 Pine Street"
    assert [(it.item_type, it.quantity) for _, it in s.conv.order.items.active()] == [("pizza", 1), ("drink", added)]


@pytest.mark.parametrize("words", [["blorp"], ["hmm", "umm", "errr"]])
def test_unclear_turns_without_end_are_bounded(pizza_menu, words):
    """A reviewer found that once unclear answers stopped being strikes (9752847), "blorp" at "anything else?"
    cycled Clarifying and Thinking for ever: a client could keep a session open with nothing understood. Six
    unclear turns in a row are answers; the next are strikes, and the third strike ends the session."""
    s = Session(pizza_menu)
    s.run("a small cheese pizza", "pickup")
    states = [s.say(words[i % len(words)]).state_after for i in range(9)]
    assert "Idle" not in states[:6] and states[-1] == "Idle", states


def test_a_quote_for_several_items_does_not_guess_a_size(pizza_menu):
    """A reviewer found "how much is a pizza and a coke?" quoted $13.00, a pizza priced without the size the
    order would ask; the answer is the pizza's price per size."""
    from mojodex_core.order.conversation.menu_answers import answer_menu_question

    (key, _text), = answer_menu_question("how much is a pizza and a coke?", pizza_menu, "en")
    assert key == "menu-price-sizes"



@pytest.mark.parametrize("before", [("a plain bagel",), ("a plain bagel toasted with butter", "no thanks", "pickup")])
def test_a_value_no_ordered_item_takes_is_offered_not_added_and_refused(bagel_menu, before):
    """"Honey" after a bagel answered 'Sorry, we don't have "honey"' and added a coffee with honey anyway. Honey is
    no option of the bagel: nothing is added, the reply says so and offers what takes it; yes adds it."""
    s = Session(bagel_menu)
    s.run(*before)
    out = s.say("Honey")
    assert [t for t, _ in s.lines()] == ["bagel"]
    assert out.response_keys == ["clarify-new-item"] and "don't have" not in out.reply
    assert '"honey"' in out.reply and "a coffee with honey?" in out.reply
    s.say("yes")
    assert [(t, f.get("sweetener")) for t, f in s.lines()] == [("bagel", None), ("coffee", "honey")]


def test_a_value_of_the_item_being_discussed_is_applied_to_it(bagel_menu):
    s = Session(bagel_menu)
    s.say("a latte and a plain bagel")
    out = s.say("honey")
    assert "clarify-new-item" not in out.response_keys and "clarify-unparsed" not in out.response_keys
    assert [(t, f.get("sweetener")) for t, f in s.lines()] == [("coffee", "honey"), ("bagel", None)]


@pytest.mark.parametrize("before", [(), ("no thanks",)])
def test_large_pepperoni_after_a_coke_is_said_back_and_offered(pizza_menu, before):
    """The first fix of the "Honey" bug was reverted: "large pepperoni" after a coke, with pickup or delivery asked,
    then added nothing and said nothing. It is said back with the pizza it describes; yes adds that pizza."""
    s = Session(pizza_menu)
    s.run("a coke", *before)
    out = s.say("large pepperoni")
    assert out.response_keys == ["clarify-new-item"] and out.state_after == "Clarifying"
    assert '"large pepperoni"' in out.reply and "a large pizza with pepperoni?" in out.reply
    assert [t for t, _ in s.lines()] == ["drink"]
    s.say("yes")
    assert s.lines()[1] == ("pizza", {"quantity": 1, "size": "LARGE", "style": [],
                                      "toppings": [{"name": "PEPPERONI"}]})


def test_a_value_several_item_types_take_offers_each_and_the_answer_picks_one(drive_menu):
    s = Session(drive_menu)
    s.say("a cheeseburger")
    out = s.say("large")
    assert out.response_keys == ["clarify-new-item"] and "large combo" in out.reply and "large drink" in out.reply
    assert [t for t, _ in s.lines()] == ["burger"]
    s.say("fries")
    assert [(t, f.get("size")) for t, f in s.lines()] == [("burger", None), ("fries", "large")]


@pytest.mark.parametrize("menu_name, first, text, field, left", [
    ("bagel_menu", "a plain bagel toasted with butter and lox", "no spread", "spread", None),
    ("bagel_menu", "a plain bagel toasted with butter and lox", "no extras", "extras", []),
    ("bagel_menu", "a plain bagel toasted with butter and lox", "hold the extras", "extras", []),
    ("bagel_menu", "a plain bagel toasted with butter and lox", "remove the spread", "spread", None),
    ("pizza_menu", "a large pizza with olives and ham", "no toppings", "toppings", []),
    ("drive_menu", "a cheeseburger with onion and pickles", "no toppings", "toppings", []),
])
def test_no_spread_clears_the_field_of_the_item_being_discussed(request, menu_name, first, text, field, left):
    """"no spread" / "no extras" were not understood ("spread" was an unknown word): a field named as a whole
    ("names" in the menu), negated, clears it on the item being discussed."""
    s = Session(request.getfixturevalue(menu_name))
    s.say(first)
    out = s.say(text)
    (_t, fields), = s.lines()
    assert fields[field] == left and out.response_keys[0] == "ack-modified", out.reply
    assert not out.errors and out.state_after == "Ordering"


def test_no_spread_answers_the_spread_question(bagel_menu):
    s = Session(bagel_menu)
    assert s.say("a plain bagel toasted").reply == "Any spread - cream cheese, butter?"
    out = s.say("no spread")
    assert out.state_after == "Ordering" and not out.errors
    assert out.reply == "Anything else on it - lox, bacon, tomato?"


def test_a_field_word_said_positively_is_not_understood(bagel_menu):
    s = Session(bagel_menu)
    s.say("a plain bagel toasted")
    out = s.say("with spread")
    assert out.state_after == "Clarifying" and s.lines()[0][1]["spread"] is None


@pytest.mark.parametrize("first, pizzas", [
    ("a large pizza with olives", 1),
    ("a large pizza with olives and ham and a small pizza with olives", 2),
])
def test_no_olives_on_the_large_pizza_changes_that_pizza(pizza_menu, first, pizzas):
    """"no olives on the large pizza" added a new large pizza with no olives: "the" was lost at "large"."""
    s = Session(pizza_menu)
    s.say(first)
    out = s.say("no olives on the large pizza")
    assert out.response_keys[0] == "ack-modified" and len(s.lines()) == pizzas
    large = s.lines()[0][1]
    assert {"name": "OLIVES"} not in large["toppings"] and large["excluded_toppings"] == [{"name": "OLIVES"}]
    if pizzas == 2:
        assert s.lines()[1][1]["toppings"] == [{"name": "OLIVES"}]
        s.say("no olives on the small one")
        assert s.lines()[1][1]["toppings"] == [] and len(s.lines()) == 2


TWO_BACON_BAGELS = "a plain bagel toasted with butter and bacon and a sesame bagel toasted with cream cheese and bacon"


@pytest.mark.parametrize("answer, without", [("the sesame one", [1]), ("2", [1]), ("the first one", [0]),
                                             ("both", [0, 1])])
def test_remove_the_bacon_from_two_bagels_asks_which_one(bagel_menu, answer, without):
    """"remove the bacon" with two bagels holding bacon answered 'we don't have "bacon"'. It asks which one, changes
    nothing meanwhile, and the answer (or "both") takes it off."""
    s = Session(bagel_menu)
    s.run(TWO_BACON_BAGELS, "pickup")
    out = s.say("remove the bacon")
    assert out.response_keys == ["clarify-reference"] and "don't have" not in out.reply
    assert [f["extras"] for _, f in s.lines()] == [["bacon"], ["bacon"]]
    out = s.say(answer)
    assert [f["extras"] for _, f in s.lines()] == [[] if i in without else ["bacon"] for i in range(2)], out.reply
    assert out.response_keys[0] == "ack-modified"


@pytest.mark.parametrize("text", ["remove the bacon from both", "no bacon on either"])
def test_remove_the_bacon_from_both_takes_it_off_both(bagel_menu, text):
    s = Session(bagel_menu)
    s.run(TWO_BACON_BAGELS, "a latte")
    out = s.say(text)
    assert [f["extras"] for _, f in s.lines()[:2]] == [[], []] and out.response_keys[0] == "ack-modified"


@pytest.mark.parametrize("before", [(), ("no thanks",)])
def test_make_it_small_with_two_pizzas_asks_which_pizza(pizza_menu, before):
    """"make it small" with two pizzas gave a pattern hint (after an unclear turn) or the pickup question again."""
    s = Session(pizza_menu)
    s.run("a large pizza with olives and a medium pizza with ham", *before)
    out = s.say("make it small")
    assert out.response_keys == ["clarify-reference"] and out.state_after == "Clarifying"
    assert [f["size"] for _, f in s.lines()] == ["LARGE", "MEDIUM"]
    s.say("the large one")
    assert [f["size"] for _, f in s.lines()] == ["SMALL", "MEDIUM"]


def test_no_to_the_offer_answers_the_offer_not_the_pending_question(bagel_menu):
    """"no" to "would you like a coffee with honey?" set the bagel "not toasted": the parser reads a bare "no" as
    the answer to the order's pending question, but the assistant's last question was the offer."""
    s = Session(bagel_menu)
    s.run("a plain bagel", "Honey")
    out = s.say("no")
    assert s.lines() == [("bagel", {"bagel_type": "plain", "quantity": 1, "toasted": None, "spread": None,
                                    "extras": []})]
    assert out.response_keys[-1] == "menu-question" and "toasted" in out.reply


def test_a_value_alone_before_anything_is_ordered_is_offered_not_guessed(drive_menu):
    """"large" as the first words added a large combo (the first item type taking a size) and said 'we don't have
    "large"'."""
    s = Session(drive_menu)
    out = s.say("large")
    assert out.response_keys == ["clarify-new-item"] and not s.lines()
    s.say("a drink")
    assert [(t, f.get("size")) for t, f in s.lines()] == [("drink", "large")]
