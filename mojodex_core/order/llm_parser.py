"""LLM parser (structured output) and the ``parse_order`` entry point.

The LLM gets the menu (item types, fields, value ids), the current order and the
pending question, and must answer with the same :class:`ParsedInput` JSON schema.
Transport, the json_schema ``response_format``, validation, the one corrective
retry and call records are the platform provider's job
(:meth:`mojodex_core.llm.LLMProvider.structured`, which implements
:class:`StructuredLLM`); output still invalid after the retry surfaces here as
:class:`OrderParseError`.

``parse_order(mode="auto")`` uses the deterministic parser and only calls the LLM
when its confidence is below the threshold or words stayed unresolved.
``mojodex_core.llm`` (and so the ``openai`` client) is imported only when an LLM is used.
"""

from __future__ import annotations

import json
import logging
import re
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal, Protocol

from pydantic import BaseModel

from mojodex_core.languages import language_file

from .grammar_words import GRAMMAR
from .menu import Menu
from .parsed_input import OrderParseError, ParsedInput
from .parser import parse_deterministic
from .tree import OrderTask

INTENTS_DIR = Path(__file__).resolve().parents[2] / "tasks_config" / "intents"


@lru_cache(maxsize=8)
def _discourse_words(lang: str = "en") -> frozenset[str]:
    """The discourse phrases of the conversation's language ("actually", "en fait"), kept whole: no content of
    their own. (Split into words, "en fait" would make the pronoun "en" one.)"""
    path = language_file(INTENTS_DIR, lang)
    if path is None:
        return frozenset()
    return frozenset(p.lower() for p in json.loads(path.read_text(encoding="utf-8")).get("discourse", ()))


@lru_cache(maxsize=8)
def _discourse_pattern(lang: str) -> re.Pattern[str] | None:
    """The language's discourse phrases as one regex, longest first (built once a language)."""
    phrases = sorted(_discourse_words(lang), key=len, reverse=True)
    return re.compile(r"\b(?:" + "|".join(map(re.escape, phrases)) + r")\b") if phrases else None


NEG_WORDS = frozenset(w for w in GRAMMAR["neg"] if " " not in w)  # "no spread": the negation of a reference
log = logging.getLogger(__name__)

ParseMode = Literal["auto", "deterministic", "llm"]
DEFAULT_THRESHOLD = 0.8
LABEL = "order_parse"


class StructuredLLM(Protocol):
    """What the parser needs from a model: ``LLMProvider`` satisfies it."""

    def structured(self, messages: list[dict], response_model: type[BaseModel], *, label: str) -> BaseModel: ...


def _menu_block(menu: Menu) -> str:
    lines = []
    for t_name, tdef in menu.item_types.items():
        lines.append(f"- item_type \"{t_name}\" (called: {', '.join([tdef.label, *tdef.names])})")
        for f_name, fdef in tdef.fields.items():
            flags = [fdef.kind] + [x for x, on in (("required", fdef.required), ("list", fdef.multi),
                                                   ("qualifiers", fdef.qualifiers),
                                                   ("negatable", fdef.negatable)) if on]
            values = ", ".join(f"{v.id}" + ("" if v.in_stock else " (out of stock)") for v in fdef.values)
            default = f"; default {json.dumps(fdef.default)}" if fdef.default not in (None, []) else ""
            lines.append(f"    - {f_name} [{', '.join(flags)}{default}]" + (f": {values}" if values else ""))
    quals = ", ".join(menu.qualifiers) or "none"
    return "\n".join(lines) + f"\nQuantity qualifiers: {quals}"


def _order_block(tree: OrderTask | None) -> str:
    if tree is None or not tree.items.items:
        return "The order is empty."
    lines = [f"  [{i}] {it.item_type} ({it.status}): {json.dumps(it.fields)}" for i, it in enumerate(tree.items.items)]
    pending = tree.pending.model_dump(exclude_none=True) if tree.pending else None
    return "Current order items (index in brackets):\n" + "\n".join(lines) + f"\nPending question: {pending}"


def build_messages(text: str, menu: Menu, tree: OrderTask | None = None) -> list[dict]:
    """Chat messages for the LLM parser (plain f-string builder)."""
    system = f"""You turn one customer message at "{menu.name}" into a JSON object (ParsedInput).
Use only the menu below: item_type names and value ids exactly as listed.

Menu:
{_menu_block(menu)}

Rules:
- new_items: one entry per ordered line, fields use value ids; set quantity only when a number is said.
  Leave out the fields not said: null clears an optional field ("no spread" -> "spread": null).
- list fields hold lists of ids; fields with qualifiers hold objects {{"name": ID, "quantity": QUALIFIER}}
  (omit "quantity" when none). A negated value goes to "excluded_<field>" with the same shape.
  A negated yes/no value is false ("not toasted" -> "toasted": false).
- answers: values answering the pending question / completing the current item; null declines an optional question.
- modifications: changes to items already in the order (item_index from the order below).
- cancel_item_index for "forget the X"; wants_cancel only to cancel the whole order.
- order_type, address, customer_name, customer_contact when said; wants_checkout when the customer is done.
- payment method goes to answers["method"] as one of in_store, cash_delivery, card_link.
- repeat_last: true when the customer asks for the previous line again ("same again"); then add nothing yourself.
- confidence: your confidence in [0, 1]; unparsed: words you could not map to the menu.
- reasoning: first, one short sentence saying why you read the message this way (it is logged, never shown).

{_order_block(tree)}"""
    return [{"role": "system", "content": system}, {"role": "user", "content": text}]


def parse_with_llm(text: str, menu: Menu, tree: OrderTask | None, llm: StructuredLLM) -> ParsedInput:
    """One structured call; output still invalid after the provider's retry raises :class:`OrderParseError`.

    Other :class:`mojodex_core.llm.LLMError` failures (not configured, timeout, rate limit...)
    propagate unchanged: their messages are fit for end users.
    """
    from mojodex_core.llm import StructuredOutputError  # lazy: the openai client is slow to import

    try:
        result = llm.structured(build_messages(text, menu, tree), ParsedInput, label=LABEL)
    except StructuredOutputError as exc:
        detail = exc.detail or str(exc)
        raise OrderParseError(f"{LABEL}: the model returned an invalid ParsedInput twice ({detail})") from exc
    if not isinstance(result, ParsedInput):
        result = ParsedInput.model_validate(result.model_dump())
    malformed = _malformed_value(result)
    if malformed is not None:
        raise OrderParseError(f"{LABEL}: the model returned a malformed value {malformed!r}")
    return result


_SCALARS = (str, int, float, bool, type(None))


def _entry_ok(entry: Any) -> bool:
    """A value id, a number or bool, or a qualified entry {"name": id, ...} with scalar details."""
    if isinstance(entry, dict):
        return isinstance(entry.get("name"), str) and all(isinstance(v, _SCALARS) for v in entry.values())
    return isinstance(entry, _SCALARS)


def _malformed_value(parsed: ParsedInput) -> Any:
    """The first value of the parse that has no field's shape (a list of lists, an entry without a name): the
    schema lets any JSON through as a value, and the state update only knows these shapes."""
    values = [v for item in parsed.new_items for v in item.fields.values()]
    values += [m.new_value for m in parsed.modifications] + list(parsed.answers.values())
    for value in values:
        entries = value if isinstance(value, list) else [value]
        if not all(_entry_ok(e) for e in entries):
            return value
    return None


def parse_order(
    text: str,
    menu: Menu,
    tree: OrderTask | None = None,
    mode: ParseMode = "auto",
    llm: StructuredLLM | None = None,
    threshold: float = DEFAULT_THRESHOLD,
    lang: str = "en",
) -> ParsedInput:
    """Parse a customer message: deterministic, LLM, or auto (deterministic first, LLM when unsure).

    In auto mode a failing LLM (invalid output, unavailable, timeout) keeps the deterministic parse.
    """
    if mode == "llm":
        if llm is None:
            raise ValueError("mode='llm' needs an llm")
        return parse_with_llm(text, menu, tree, llm)
    parsed = parse_deterministic(text, menu, tree)
    if mode == "deterministic" or llm is None or not needs_llm(parsed, threshold, lang):
        return parsed
    from mojodex_core.llm import LLMError

    try:
        return parse_with_llm(text, menu, tree, llm)
    except (OrderParseError, LLMError) as exc:
        log.warning("LLM parse failed, keeping the deterministic parse: %s", exc)
        return parsed


def needs_llm(parsed: ParsedInput, threshold: float = DEFAULT_THRESHOLD, lang: str = "en") -> bool:
    """Auto mode asks the LLM when the deterministic confidence is low or words stayed unresolved - except when
    all that is unresolved is a reference the deterministic parse kept ("honey" after a bagel, "no olives on the
    small pizza" with one large): the conversation asks about it ("which one?", an offer), which the LLM's result,
    with no ``reference``, would lose (and "honey" would silently become a coffee with honey)."""
    if _only_a_reference(parsed, lang):
        return False
    return parsed.confidence < threshold or bool(parsed.unparsed)


def _only_a_reference(parsed: ParsedInput, lang: str) -> bool:
    if parsed.reference is None:
        return False
    said = set(parsed.reference.said.lower().split()) | {"the"} | NEG_WORDS
    pattern = _discourse_pattern(lang)

    def rest(span: str) -> set[str]:
        span = span.lower()
        return set((pattern.sub(" ", span) if pattern is not None else span).split())

    return all(rest(span) <= said for span in parsed.unparsed)
