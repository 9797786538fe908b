"""Language-level words of the order grammar (menu-independent, English).

Menus supply entities (items, values, qualifiers); this module supplies the glue:
negation, connectors, intents and the filler words that are safe to ignore.
Phrases are normalised by the lexicon exactly like the input, so plurals and
apostrophes don't matter here ("don't want" also matches "dont want").
"""

from __future__ import annotations

from typing import Any


def _kind(*phrases: str, payload: Any = None) -> dict[str, Any]:
    return {p: payload for p in phrases}


GRAMMAR: dict[str, dict[str, Any]] = {
    "neg": _kind(
        "no", "not", "without", "w/o", "hold", "hold the", "hold off on", "avoid", "skip", "leave off",
        "leave out", "minus", "except", "excluding", "exclude", "don't want", "do not want", "dont want",
        "don't put", "do not put", "don't add", "do not add", "don't need", "do not need", "won't need",
        "will not need", "don't include", "do not include", "don't like", "do not like", "nothing of",
        "none of", "never", "allergic to", "no need for", "not want", "free of", "sans", "don't give me",
        "instead of",
    ),
    "with": _kind(
        "with", "along with", "including", "include", "includes", "topped with", "add", "adding", "added",
        "comes with", "that has", "which has", "having", "put", "covered in", "top it with", "and add",
        "and with", "also add", "in addition", "w",
    ),
    "and": _kind("and", "as well as", "also", "plus", "and also", "then", "and then", "as well", "too"),
    "or": _kind("or", "nor", "either"),
    "but": _kind("but", "though", "however", "although", "yet"),
    "def": _kind("the", "that", "my", "this", "those", "these", "it"),
    "cancel": _kind(
        "forget", "cancel", "remove", "scratch", "delete", "drop", "take off", "take away", "never mind",
        "nevermind", "get rid of", "lose the", "no more", "i changed my mind about",
    ),
    "cancel_all": _kind(
        "cancel the order", "cancel my order", "cancel everything", "cancel it all", "cancel the whole order",
        "forget everything", "forget it all", "forget the whole thing", "start over", "cancel order",
        "forget the order", "forget my order",
    ),
    "modify": _kind(
        "make that", "make it", "make them", "make those", "make the", "change", "change it to", "switch",
        "swap", "instead", "rather", "actually make", "update", "can you make", "should be", "should have been",
        "was supposed to be", "is supposed to be",
    ),
    "yes": _kind(
        "yes", "yeah", "yep", "yup", "sure", "ok", "okay", "correct", "right", "absolutely", "definitely",
        "sounds good", "please do", "that's right", "of course", "go ahead", "yes please", "confirm",
        "looks good", "perfect", "affirmative",
    ),
    "no_answer": _kind("nope", "nah", "no thanks", "no thank you", "not really", "i'm good", "im good",
                       "none", "nothing else on it", "just that", "as is"),
    "pickup": _kind(
        "pickup", "pick up", "pick it up", "for pickup", "carry out", "carryout", "takeout", "take out",
        "to go", "collect", "collection", "i'll come get it", "come pick it up",
    ),
    "delivery": _kind(
        "delivery", "deliver", "delivered", "deliver it", "have it delivered", "bring it", "for delivery",
        "deliver to",
    ),
    "checkout": _kind(
        "that's all", "that's it", "that is all", "that will be all", "that'll be all", "that's everything",
        "i'm done", "i am done", "nothing else", "check out", "checkout", "ready to pay", "place the order",
        "place my order", "all set", "that'll do", "that will do", "that is it", "i'm all set", "done",
        "complete my order", "finish my order",
    ),
    "pay": {
        "cash": "cash_delivery", "cash on delivery": "cash_delivery", "pay cash": "cash_delivery",
        "pay with cash": "cash_delivery", "card": "card_link", "credit card": "card_link",
        "debit card": "card_link", "card link": "card_link", "payment link": "card_link",
        "send me a link": "card_link", "send a link": "card_link", "link": "card_link",
        "pay online": "card_link", "online": "card_link", "in store": "in_store",
        "at the store": "in_store", "pay in store": "in_store", "at the counter": "in_store",
        "when i pick up": "in_store", "when i pick it up": "in_store", "at pickup": "in_store",
    },
    # the customer pauses or corrects themselves: "a medium, hold on, make it a large", "butter, no wait, jam".
    # "hold on" followed straight by a menu value is the negation "hold the ..." ("but hold on chicken").
    "wait": _kind("wait", "no wait", "oh wait", "wait a second", "wait a minute", "hold on", "hold on a second",
                  "hang on", "hang on a second", "i mean", "or rather", "let me think", "actually no", "no actually",
                  "actually", "sorry", "oops"),
    # the whole order rather than one item: "make everything large" - not represented, so a doubt
    "all_items": _kind("make everything", "make them all", "make all of them", "make it all", "make all",
                       "make both", "make both of them", "everything large", "everything small"),
    # a part of a line already said: "toast one of them" - not represented, so a doubt
    "subset": _kind("one of them", "one of those", "one of these", "two of them", "two of those", "some of them",
                    "some of those", "1 of them", "2 of them", "1 of those", "2 of those"),
    # asks for the previous line again: the parser can't build it, it flags ``repeat_last``
    "repeat": _kind("same again", "the same again", "same thing again", "one more of the same", "same as before",
                    "same as last time", "another of the same", "the same thing again"),
    # a copy of something said before ("another pizza, same as the first", "a small one with the same"):
    # the parser can't copy a line, so this is a doubt (reported in unparsed)
    "same": _kind("same as", "the same", "same thing", "same one", "the same as", "same as the", "likewise",
                  "ditto"),
    # requests about preparation or serving that no menu field can hold: said, so never silently ignored
    "unsupported": _kind("well done", "well cooked", "extra crispy", "crispy", "cut into", "cut in",
                         "on the side", "separately", "to share"),
    # a share of the line just named: "a dozen bagels, half with butter" (6 + 6)
    "half": _kind("half", "half of them", "half of those", "the other half"),
    # phrases about the occasion, not the item: they must not read as a size ("lunch", "party")
    "filler": _kind("for lunch", "at lunch", "lunch time", "lunchtime", "for dinner", "for breakfast",
                    "for the party", "for a party", "for my party", "for our party", "for the kids party"),
    # distributive words: what is said next (or, said last, what the current item got) goes to every
    # item of the list just named ("a large and a small pizza, both with ham")
    # payload: how many of the last items it covers (None: the whole list)
    "dist": {"both": 2, "each": None, "all": None, "every one": None, "each one": None, "in either": 2,
             "on either": 2, "for either": 2, "either one": 2},
    # a further item of the same kind, inside a split ("two pizzas, one with ham and the other with olives");
    # payload: how many (None: whatever is left of the announced quantity)
    "other": {
        "another": 1, "another one": 1, "the other": 1, "the other one": 1, "the first": 1, "the first one": 1,
        "the second": 1, "the second one": 1, "the third": 1, "the third one": 1, "the last": 1,
        "the last one": 1, "first one": 1, "second one": 1, "third one": 1, "fourth one": 1, "last one": 1,
        "the others": None, "the other ones": None, "the rest": None,
        "the rest of them": None, "the remaining": None, "the remaining ones": None,
    },
}

# Removals said around their object: "take the olives off", "leave the onions out", "get the bacon off". The
# verb (a filler on its own) reads as a "cancel" word when menu words and then one of its particles follow it.
SPLIT_REMOVALS: dict[str, tuple[str, ...]] = {
    "take": ("off", "out", "away"), "leave": ("off", "out"), "get": ("off",), "hold": ("off",),
    "keep": ("off",), "pull": ("off",), "scrape": ("off",),
}

# Fillers that end a negation once it negated something: "no toppings, just cheese" (cheese is not negated).
NEG_ENDS = frozenset({"just", "only"})

# A clause after a negation that ends with one of these bare words (not "instead of") names the replacement,
# so the negation ends before it: "no olives, mushrooms instead" (mushrooms added, not negated).
REPLACEMENT_TAILS = frozenset({"instead"})

# What may open that clause right after the negated values, whatever the negation: a comma ("no olives, mushrooms
# instead", "remove the olives, mushrooms instead").
REPLACEMENT_OPENERS = frozenset({","})

# A bare "and" opens it only between ONE value negated by one of these words and ONE value ("no olives and mushrooms
# instead"). "remove the / hold the / without olives and mushrooms instead" take both off (instead of what was said
# before), "no olives and ham and mushrooms instead" negates all three, "no olives and mushrooms ham instead" is a
# dropped comma (ham instead of both); "plus", "and then", "and no ..." never open it.
AND_REPLACEMENT_NEGATIONS = frozenset({"no"})

# A whole message swapping one value of a line for another (substitution.py, only in this shape):
# [please] VERB [the] X LINK [a|an|the] Y [please|thanks|thank you] - "change the pepperoni to sausage",
# "replace pickles with onions", "swap the coke for a sprite please".
SUBSTITUTION_VERBS = frozenset({"change", "replace", "swap", "switch"})
SUBSTITUTION_LINKS = frozenset({"to", "with", "for"})
SUBSTITUTION_ARTICLES = frozenset({"a", "an", "the"})  # before Y; before X only "the"
SUBSTITUTION_POLITE = ("please", "thanks", "thank you")

# Words said after an address that are not part of it: "deliver to 9 Pine Street instead".
ADDRESS_TAIL = ("instead", "please", "thanks", "thank you", "actually", "now", "then", "rather")

# Words that carry no order content. Unknown words outside this list are reported as unparsed.
FILLER_WORDS = [
    "i", "i'd", "i'll", "i'm", "i've", "me", "my", "mine", "we", "we'd", "we'll", "us", "our", "you", "your",
    "you'd", "ya", "u", "it", "its", "it's", "they", "them", "their", "he", "she", "him", "her", "hi", "hello",
    "hey", "good", "morning", "afternoon", "evening", "night", "tonight", "today", "there", "thanks", "thank",
    "thankyou", "please", "pls", "plz", "kindly", "sir", "maam", "ma'am", "buddy", "friend", "guys", "want",
    "wanted", "wanna", "would", "like", "liked", "love", "prefer", "need", "needed", "get", "gets", "getting",
    "got", "give", "gimme", "take", "took", "have", "having", "had", "has", "order", "ordered", "ordering",
    "place", "placing", "placed", "start", "started", "begin", "let", "let's", "lets", "can", "could", "may",
    "might", "will", "shall", "should", "must", "do", "does", "did", "doing", "done", "be", "been", "being", "is",
    "are", "was", "were", "am", "try", "trying", "tried", "go", "going", "gonna", "for", "from", "of", "to", "in",
    "on", "at", "by", "about", "into", "onto", "over", "up", "out", "off", "as", "so", "just", "only", "also",
    "really", "very", "much", "some", "any", "all", "both", "each", "every", "either", "one", "ones", "else",
    "what", "which", "who", "whom", "whose", "that's", "this", "that", "these", "those", "then", "than",
    "there's", "here", "here's", "how", "how's", "a", "an", "the", "and", "or", "but", "if", "when", "while",
    "where", "why", "because", "since", "until", "oh", "ok", "okay", "um", "uh", "uhm", "hmm", "well", "alright",
    "yeah", "guess", "think", "thinking", "feel", "feeling", "maybe", "perhaps", "wise",
    "style", "styled", "type", "kind", "kinds", "sort", "size", "sized", "orders", "item", "items",
    "piece", "pieces", "whole", "entire", "another", "other",
    "more", "extra", "today's", "tonight's", "lunch", "dinner", "breakfast", "meal", "see", "say", "said", "tell",
    "told", "know", "wondering", "wonder", "looking", "look", "find", "make", "made", "put", "putting", "time",
    "day", "week", "appreciate", "appreciated", "great", "awesome", "beautiful", "nice", "cool", "lovely",
    "wonderful", "super", "lot", "lots", "thing", "things", "stuff", "something", "anything", "everything",
    "nothing", "ready", "sure", "set", "fine", "again", "now", "soon", "quick", "quickly", "fast", "rush", "asap",
    "top", "x", "times", "cheers", "bye", "goodbye",
    "fresh", "hot", "warm", "cold",
    "regular", "name", "name's", "called", "call", "hm", "er", "erm",
    "anyway", "anyways", "instead", "first", "second", "next", "last", "lastly", "finally", "plain", "together",
    "throw", "toss",
]

# Words that stand for "whatever there is" after "with": at a shop whose menu has no such value
# ("a hamburger with everything" at the drive-thru) they are an unresolved request, not fillers.
VAGUE_OBJECTS = frozenset({"everything", "anything", "something", "stuff"})

NORM_OVERRIDES: dict[str, str] = {"sized": "size", "litres": "litre", "liters": "liter"}

# Menu words that are also auxiliaries ("can i get", "can you"): read as fillers before a pronoun.
MODALS = frozenset({"can"})
PRONOUNS = frozenset({"i", "you", "we", "u", "ya", "he", "she", "they", "someone", "somebody", "yall"})
