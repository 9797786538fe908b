"""Customer-facing texts and conversation keyword lists, loaded from resource files.

* ``tasks_config/responses/<language>.json``: every text the customer sees (``say``); missing languages and
  keys fall back to ``en``. The LLM never writes customer-facing text for an order task.
* ``tasks_config/intents/<language>.json``: the keyword lists of the supervisor and the event detectors
  (yes/no, "that's it", "give me a minute", off-topic words...); the ``en`` lists are always used as well.
"""

from __future__ import annotations

import json
import re
import string
import unicodedata
from functools import lru_cache
from pathlib import Path
from typing import Any

from mojodex_core.languages import language_code, language_file

CONFIG_DIR = Path(__file__).resolve().parents[3] / "tasks_config"
RESPONSES_DIR = CONFIG_DIR / "responses"
INTENTS_DIR = CONFIG_DIR / "intents"
FALLBACK = "en"
_SYMBOLS = {"USD": "$", "EUR": "\u20ac", "GBP": "\u00a3", "CAD": "$", "CHF": "CHF"}


class _Blank(dict):
    def __missing__(self, key: str) -> str:
        return ""


@lru_cache(maxsize=16)
def responses(language: str) -> dict[str, str]:
    """The response table of ``language`` (keys missing there come from ``en``; not a language code: ``en``)."""
    base = json.loads((RESPONSES_DIR / f"{FALLBACK}.json").read_text(encoding="utf-8"))
    path = language_file(RESPONSES_DIR, language) if language != FALLBACK else None
    return base | json.loads(path.read_text(encoding="utf-8")) if path is not None else base


def languages() -> list[str]:
    return sorted(p.stem for p in RESPONSES_DIR.glob("*.json"))


def supported_language(value: str | None) -> str | None:
    """The language of ``value`` that has responses: the code itself, else its base language
    (``fr-CA``: ``fr``); None when ``value`` is no language code or neither has a file."""
    code = language_code(value)
    if code is None:
        return None
    shipped = languages()
    return next((c for c in (code, code.split("-")[0]) if c in shipped), None)


def say(language: str, key: str, **values: Any) -> str:
    """The text of resource ``key`` in ``language`` filled with ``values`` (unknown placeholders -> "")."""
    table = responses(language)
    if key not in table:
        raise KeyError(f"no response {key!r} in {RESPONSES_DIR}")
    text = string.Formatter().vformat(table[key], (), _Blank(values))
    return re.sub(r"\s+", " ", text).strip()


def money(language: str, amount: float, currency: str = "USD") -> str:
    return say(language, "money", amount=f"{amount:.2f}", symbol=_SYMBOLS.get(currency, currency))


def join_list(language: str, parts: list[str], conj: str = "word-and") -> str:
    parts = [p for p in parts if p]
    if len(parts) <= 1:
        return "".join(parts)
    return ", ".join(parts[:-1]) + f" {say(language, conj)} " + parts[-1]


# -- keywords ------------------------------------------------------------------------------------------

def normalise(text: str) -> str:
    """Lower case, accents stripped, apostrophes dropped, punctuation to spaces."""
    text = unicodedata.normalize("NFKD", text.replace("\u2019", "'").replace("\u2018", "'"))
    text = "".join(c for c in text if not unicodedata.combining(c)).lower().replace("'", "")
    return " ".join(re.sub(r"[^a-z0-9]+", " ", text).split())


@lru_cache(maxsize=16)
def _raw_intents(language: str) -> dict[str, Any]:
    path = language_file(INTENTS_DIR, language)  # none: English alone (keywords merges it)
    return json.loads(path.read_text(encoding="utf-8")) if path is not None else {}


def _merge(a: Any, b: Any) -> Any:
    if isinstance(a, dict) and isinstance(b, dict):
        return {k: _merge(a.get(k), b.get(k)) if k in a and k in b else a.get(k, b.get(k)) for k in a | b}
    if isinstance(a, list) and isinstance(b, list):
        return a + [x for x in b if x not in a]
    return a if a is not None else b


@lru_cache(maxsize=16)
def keywords(language: str) -> dict[str, Any]:
    """Keyword lists of ``language`` plus the English ones, normalised."""
    data = _raw_intents(language) if language == FALLBACK else _merge(_raw_intents(language), _raw_intents(FALLBACK))

    def norm(value: Any) -> Any:
        if isinstance(value, list):
            return tuple(normalise(v) for v in value)
        if isinstance(value, dict):
            return {(normalise(k) if isinstance(v, int) else k): norm(v) for k, v in value.items()}
        return value

    return {k: norm(v) for k, v in data.items()}


def has_phrase(norm_text: str, phrases: tuple[str, ...]) -> str | None:
    """The first phrase found as whole words in the normalised text."""
    padded = f" {norm_text} "
    for phrase in phrases:
        if phrase and f" {phrase} " in padded:
            return phrase
    return None


FILLERS = ("please", "thanks", "thank you", "um", "uh", "er", "oh", "well", "so", "then", "just", "actually",
           "merci", "sil vous plait", "euh", "alors", "bon", "ok", "okay")


# Normalised once, longest first: normalising them at every call was ~90 % of only_phrases' time.
_FILLERS_PADDED = tuple(f" {normalise(f)} " for f in sorted(FILLERS, key=len, reverse=True))


@lru_cache(maxsize=256)
def _longest_first(phrase_lists: tuple[tuple[str, ...], ...]) -> tuple[str, ...]:
    """The phrases of these lists, padded with spaces, longest first (the lists are keywords')."""
    return tuple(f" {p} " for p in sorted({p for lst in phrase_lists for p in lst if p}, key=len, reverse=True))


def only_phrases(norm_text: str, *phrase_lists: tuple[str, ...]) -> bool:
    """The text says nothing but phrases of these lists (and fillers)."""
    rest = f" {norm_text} "
    found = False
    for phrase in _longest_first(tuple(map(tuple, phrase_lists))):  # keywords' tuples pass as they are
        if phrase in rest:
            rest = rest.replace(phrase, " ")
            found = True
    for filler in _FILLERS_PADDED:
        rest = rest.replace(filler, " ")
    return found and not rest.strip()


@lru_cache(maxsize=16)
def _opening_pause(language: str) -> re.Pattern[str] | None:
    shape = keywords(language).get("opening_pause")
    if not shape:
        return None

    def alt(key: str) -> str:
        return "|".join(r"\s+".join(map(re.escape, p.split())) for p in shape.get(key, ()) if p)

    return re.compile(rf"\s*(?:(?:{alt('before')})[\s,]+)?(?:{alt('pause')})(?:\s+(?:{alt('after')}))?"
                      r"\s*[,\u2013\u2014-]\s*(?P<rest>\S.*)", re.IGNORECASE | re.DOTALL)


def after_opening_pause(text: str, language: str) -> str:
    """``text`` without an opening pause set off by a comma or a dash ("hold on, mushrooms on that" -> "mushrooms on
    that"): the rest is read as if sent alone. Left as said without the comma ("hold on mushrooms"), and when the rest
    still takes time ("hold on, which fries... let me think", "hold on, not sure about the drink": needs time)."""
    shape = _opening_pause(language)
    found = shape.fullmatch(text) if shape else None
    rest = normalise(found.group("rest")) if found else ""
    kw = keywords(language)
    still_pausing = kw.get("needs_time", ()) + kw.get("opening_pause", {}).get("goes_on", ())
    return found.group("rest") if found and rest and not has_phrase(rest, still_pausing) else text


def _squeeze(text: str) -> str:
    """Letters said longer collapsed: "hmmm", "ummm", "errr" -> "hm", "um", "er"."""
    return re.sub(r"([a-z])\1+", r"\1", text)


def hesitation_only(norm_text: str, phrases: tuple[str, ...]) -> bool:
    """The text is nothing but hesitation words ("hmm", "umm... errr"), however long they are drawn out."""
    return only_phrases(_squeeze(norm_text), tuple(_squeeze(p) for p in phrases))


def before_price_tail(text: str, language: str) -> str | None:
    """``text`` without a price question referring back at its end, set off by a comma, a period or a join word
    ("add mushrooms, how much is that?" -> "add mushrooms"; the ``price_tail`` lists: asks, then ends such as
    "now"); None when it has none, or nothing before it."""
    shape = keywords(language).get("price_tail")
    if not shape:
        return None
    joins = "|".join(r"\s+".join(map(re.escape, p.split())) for p in shape.get("joins", ()) if p)
    asks, ends = set(shape.get("asks", ())), set(shape.get("ends", ()))
    for sep in re.finditer(rf"\s*[,.]+\s*(?:(?:{joins})\s+)?|\s+(?:{joins})\s+", text, re.IGNORECASE):
        head, tail = text[:sep.start()], normalise(text[sep.end():])
        last = tail.rsplit(" ", 1)
        if normalise(head) and (tail in asks or (len(last) == 2 and last[0] in asks and last[1] in ends)):
            return head
    return None
