"""Resource files: key parity between languages, every key used in code exists, French replies."""

from __future__ import annotations

import json
import re
import string
from pathlib import Path
from typing import get_args

import pytest

from mojodex_core.order.conversation import OffTopicType, mark_unavailable
from mojodex_core.order.conversation.resources import INTENTS_DIR, RESPONSES_DIR, keywords, responses, say

from .conftest import Session

PACKAGE = Path(__file__).resolve().parents[3] / "mojodex_core" / "order" / "conversation"
DYNAMIC = {  # keys built at run time: f"off-topic-{type}-{level}", f"payment-{method}", "clarify-" + step
    **{f"off-topic-{t}-{lvl}": None for t in ("sexual-content", "prompt-engineering", "not-understandable",
                                               "simply-unrelated") for lvl in (1, 2)},
    **{f"payment-{m}": None for m in ("in_store", "cash_delivery", "card_link")},
    **{f"clarify-{k}": None for k in ("customer-name", "customer-contact", "address")},
}


def _load(lang: str) -> dict[str, str]:
    return json.loads((RESPONSES_DIR / f"{lang}.json").read_text(encoding="utf-8"))


def _placeholders(text: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(text) if name}


def test_languages_have_the_same_keys_and_placeholders():
    en, fr = _load("en"), _load("fr")
    assert set(en) == set(fr)
    for key in en:
        assert _placeholders(en[key]) == _placeholders(fr[key]), key
        assert fr[key].strip(), key


def test_every_key_used_in_code_exists():
    """Every hyphenated string literal of the package is a response key (they are the only ones), and every
    response key is used."""
    used: set[str] = set()
    for path in PACKAGE.glob("*.py"):
        source = path.read_text(encoding="utf-8")
        used |= set(re.findall(r'"([a-z]+(?:-[a-z0-9_]+)+)"', source))
        used |= set(re.findall(r'\bsay\([a-z_.]+, "([a-z\-]+)"', source))
    used -= set(get_args(OffTopicType)) | {"menu-question", "utf-8"}  # type names, the menu question, encoding
    en = _load("en")
    assert used - set(en) == set()
    assert set(DYNAMIC) - set(en) == set()
    assert set(en) - used - set(DYNAMIC) == set()  # no dead entries


def test_missing_language_falls_back_to_english():
    assert responses("de") == responses("en")
    assert say("de", "goodbye") == say("en", "goodbye")
    with pytest.raises(KeyError):
        say("en", "no-such-key")


def test_keyword_files_parse_and_french_adds_to_english():
    assert {p.stem for p in INTENTS_DIR.glob("*.json")} >= {"en", "fr"}
    fr = keywords("fr")
    assert "cest tout" in fr["done"] and "thats it" in fr["done"]
    assert fr["ordinals"]["deuxieme"] == 2


def test_french_conversation_replies_come_from_fr_json(pizza_menu):
    fr = _load("fr")
    s = Session(pizza_menu, language="fr")
    assert s.greeting == fr["greeting"].format(shop=pizza_menu.name)
    out = s.say("a large pizza")  # the parser reads English menu words; the replies are French
    assert (out.response_key, out.reply) == ("menu-question", "Quelles garnitures sur la large pizza ?")  # menu fr
    out = s.say("non")
    assert (out.response_key, out.reply) == ("ask-order-type", fr["ask-order-type"])
    out = s.say("à emporter")  # keyword answers from intents/fr.json
    assert out.reply == "C'est noté, à emporter. Voulez-vous autre chose avec ça - coke, diet coke ou coke zero ?"
    out = s.say("non merci")
    assert (out.transition, out.state_after) == ("USER_SAYS_DONE", "Confirming")
    assert out.reply == "Avant de vous relire la commande : à quel nom est la commande ?"
    out = s.say("c'est tout")  # not taken as a name
    assert out.reply == fr["ask-customer-name"] and s.conv.order.customer_info.name is None
    s.run("Dana", "dana@example.com")
    out = s.say("sur place")
    assert out.reply == ("Voici votre commande : a large pizza, à emporter, paiement sur place, au nom de Dana. "
                         "Le total est de 13.50 $. Je la valide ?")
    out = s.say("oui")
    assert out.state_after == "Closing"
    assert out.reply == "Merci, Dana ! Votre commande est validée - le total est de 13.50 $. Bon appétit !"
    for o in s.outcomes:
        for key in o.response_keys:
            assert key == "menu-question" or key in fr


def test_french_off_topic_and_out_of_stock(pizza_menu):
    s = Session(pizza_menu, language="fr")
    s.say("a large pizza with mushrooms")
    s.menu = mark_unavailable(pizza_menu, "pizza", "toppings", "MUSHROOMS", False)
    out = s.event("out_of_stock", item_type="pizza", field="toppings", value="MUSHROOMS")
    assert out.reply == "Désolé, nous n'avons plus de mushrooms pour le moment. Voulez-vous onions à la place ?"
    out = s.say("quel temps fait-il ? la météo ?")
    assert out.response_key == "off-topic-simply-unrelated-1" and out.reply == _load("fr")[out.response_key]


def test_generic_french_field_question_when_the_menu_has_none(drive_menu):
    s = Session(drive_menu, language="fr")
    out = s.say("a combo")
    assert out.response_key == "ask-field-generic"
    assert out.reply == "Quel choix pour « combo » pour le combo ?"
