"""Conversations a tester had with the shipped menus, each one a bug found and fixed."""

from __future__ import annotations

import pytest

from mojodex_core.order.lexicon import extract_contacts

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
