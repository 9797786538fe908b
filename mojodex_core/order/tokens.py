"""Tokenizer: text -> normalised tokens, the first step of the parser.

Normalisation (lower case, accents stripped, number words to digits, a light plural stemmer) is applied to both
menu phrases and input, so "two large pizzas" and "2 large pizza" look the same to the parser. E-mail addresses
and phone numbers are taken out of the text before it is tokenized (:func:`extract_contacts`).

The per-menu lexicon (:mod:`lexicon`) reads these tokens into chunks.
"""

from __future__ import annotations

import re
import unicodedata
from typing import NamedTuple

from . import grammar_words as gw

_TOKEN_RE = re.compile(r"\d+(?:\.\d+)?|[a-z]+(?:'[a-z]+)*|[.!?;,]")


_EMAIL_RE = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
# A phone number: 7 to 15 digits (a local "555-1234" up to E.164), with the usual separators.
_PHONE_RE = re.compile(r"(?<!\w)\+?\d[\d\s().-]{5,}\d(?!\w)")


_PHONE_DIGITS = range(7, 16)


NUMBER_RE = re.compile(r"\d+(?:\.\d+)?")


_ABBREVIATIONS = frozenset({"dr", "mr", "mrs", "ms", "st", "fl", "oz", "lb"})


_UNITS = {w: i for i, w in enumerate([
    "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve",
    "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen", "twenty",
])}


_TENS = {"twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80,
         "ninety": 90}


class Token(NamedTuple):
    raw: str
    norm: str


def singular(word: str) -> str:
    """Light plural stemmer; only needs to map singular and plural to the same key."""
    if len(word) <= 2 or word.endswith("ss") or not word.endswith("s"):
        return word
    if len(word) == 3:  # "ups" -> "up", "mls" -> "ml"; "yes", "gas", "his" stay
        return word[:2] if word[1] not in "aeiou" else word
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith("oes"):
        return word[:-2]
    if word.endswith(("ches", "shes", "xes", "sses")):
        return word[:-2]
    return word[:-1]


def norm_word(word: str) -> str:
    """Normalised form of one lower-case word: apostrophes dropped ("i'll" == "ill"), singular."""
    word = word.replace("'", "")
    return gw.NORM_OVERRIDES.get(word, singular(word))


def fmt_number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


def _merge_numbers(words: list[str]) -> list[str]:
    """Number words to digits: "twenty four" -> 24, "seven and a half" -> 7.5, "five hundred" -> 500,
    "a dozen" -> 12, "a couple of" -> 2."""
    out: list[str] = []
    i = 0
    while i < len(words):
        w = words[i]
        val: float | None = None
        if w in _UNITS or w in _TENS or NUMBER_RE.fullmatch(w):
            val = float(_UNITS.get(w, _TENS.get(w, 0))) if not NUMBER_RE.fullmatch(w) else float(w)
            j = i + 1
            if w in _TENS and j < len(words) and words[j] in _UNITS and 0 < _UNITS[words[j]] < 10:
                val += _UNITS[words[j]]
                j += 1
            if j < len(words) and words[j] == "hundred":
                val *= 100
                j += 1
            if words[j:j + 3] == ["and", "a", "half"]:
                val += 0.5
                j += 3
            elif j + 1 < len(words) and words[j] == "point" and words[j + 1] in _UNITS:
                val += _UNITS[words[j + 1]] / 10
                j += 2
            out.append(fmt_number(val))
            i = j
            continue
        if w == "dozen":
            if out and out[-1] in ("a", "1"):
                out.pop()
            if out and out[-1] == "half":  # "half a dozen", "a half dozen"
                out.pop()
                if out and out[-1] in ("a", "1"):
                    out.pop()
                out.append("6")
            else:
                out.append("12")
        elif w in ("couple", "pair") and words[i + 1:i + 2] == ["of"]:  # "a couple of cokes"
            if out and out[-1] in ("a", "1"):
                out.pop()
            out.append("2")
            i += 1
        else:
            out.append(w)
        i += 1
    return out


def extract_contacts(text: str) -> tuple[str, list[str]]:
    """Remove emails / phone numbers from ``text`` (they are not order words); return them."""
    found = [m.group(0).strip() for m in _EMAIL_RE.finditer(text)]
    text = _EMAIL_RE.sub(" ", text)

    def phone(match: re.Match[str]) -> str:
        if sum(c.isdigit() for c in match.group(0)) not in _PHONE_DIGITS:
            return match.group(0)
        found.append(match.group(0).strip())
        return " "

    return _PHONE_RE.sub(phone, text), found


def normalise_text(text: str) -> str:
    text = unicodedata.normalize("NFKD", text.replace("\u2019", "'").replace("\u2018", "'"))
    return "".join(c for c in text if not unicodedata.combining(c)).lower()


def tokenize(text: str) -> list[Token]:
    """Tokens with raw and normalised forms; sentence punctuation kept as "." tokens, commas as ","
    (a filler that still separates: "a cheeseburger, fries" are two things said, not one glued name)."""
    raw = _TOKEN_RE.findall(normalise_text(text).replace("&", " and ").replace("#", " number "))
    words: list[str] = []
    for w in raw:
        if w in ".!?;":
            # "dr. pepper", "fl. oz": a period after an abbreviation is not a sentence end
            if words and words[-1] in _ABBREVIATIONS:
                continue
            words.append(".")
        else:
            words.append(w)
    out: list[Token] = []
    for w in _merge_numbers(words):
        if NUMBER_RE.fullmatch(w) or w in (".", ","):
            out.append(Token(w, w))
        else:
            out.append(Token(w, norm_word(w)))
    return out


def norm_phrase(phrase: str) -> tuple[str, ...]:
    return tuple(t.norm for t in tokenize(phrase) if t.norm not in (".", ","))
