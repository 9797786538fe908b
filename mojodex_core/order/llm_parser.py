"""LLM parser (structured output) and the ``parse_order`` entry point.

The LLM gets the menu (item types, fields, value ids), the current order and the
pending question, and must answer with the same :class:`ParsedInput` JSON schema,
sent as an OpenAI ``response_format`` json_schema. Output is validated by pydantic;
invalid output is retried once with the validation error appended, then
:class:`OrderParseError` is raised.

``parse_order(mode="auto")`` uses the deterministic parser and only calls the LLM
when its confidence is below the threshold or words stayed unresolved.
"""

from __future__ import annotations

import json
import logging
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ValidationError

from .menu import Menu
from .parsed_input import OrderParseError, ParsedInput
from .parser import parse_deterministic
from .tree import OrderTask

log = logging.getLogger(__name__)

ParseMode = Literal["auto", "deterministic", "llm"]
DEFAULT_THRESHOLD = 0.8


class StructuredLLM(Protocol):
    def structured(self, messages: list[dict], response_model: type[BaseModel], *, label: str) -> BaseModel: ...


class OpenAIStructuredLLM:
    """:class:`StructuredLLM` over an ``openai.OpenAI`` client (any OpenAI-compatible server)."""

    def __init__(self, client: Any, model: str, *, temperature: float = 0.0) -> None:
        self.client = client
        self.model = model
        self.temperature = temperature

    def structured(self, messages: list[dict], response_model: type[BaseModel], *, label: str) -> BaseModel:
        response_format = {
            "type": "json_schema",
            "json_schema": {"name": response_model.__name__, "schema": response_model.model_json_schema(),
                            "strict": False},
        }
        convo = list(messages)
        problem = ""
        for attempt in (1, 2):
            resp = self.client.chat.completions.create(
                model=self.model, messages=convo, response_format=response_format, temperature=self.temperature
            )
            content = (resp.choices[0].message.content or "").strip() if resp.choices else ""
            try:
                return response_model.model_validate_json(content)
            except ValidationError as exc:
                problem = _short_error(exc)
            log.info("%s: invalid structured output (attempt %d): %s", label, attempt, problem)
            convo = convo + [
                {"role": "assistant", "content": content},
                {"role": "user", "content": f"That output was invalid: {problem}\n"
                                            "Reply again with only a JSON object matching the schema."},
            ]
        raise OrderParseError(f"{label}: the model returned invalid {response_model.__name__} twice: {problem}")


def _short_error(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors()[:5]:
        where = ".".join(str(p) for p in err["loc"]) or "(root)"
        parts.append(f"{where}: {err['msg']}")
    return "; ".join(parts)


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
- list fields hold lists of ids; fields with qualifiers hold objects {{"name": ID, "quantity": QUALIFIER}}
  (omit "quantity" when none). A negated value goes to "excluded_<field>" with the same shape.
  A negated yes/no value is false ("not toasted" -> "toasted": false).
- answers: values answering the pending question / completing the current item; null declines an optional question.
- modifications: changes to items already in the order (item_index from the order below).
- cancel_item_index for "forget the X"; wants_cancel only to cancel the whole order.
- order_type, address, customer_name, customer_contact when said; wants_checkout when the customer is done.
- payment method goes to answers["method"] as one of in_store, cash_delivery, card_link.
- confidence: your confidence in [0, 1]; unparsed: words you could not map to the menu.

{_order_block(tree)}"""
    return [{"role": "system", "content": system}, {"role": "user", "content": text}]


def parse_with_llm(text: str, menu: Menu, tree: OrderTask | None, llm: StructuredLLM) -> ParsedInput:
    result = llm.structured(build_messages(text, menu, tree), ParsedInput, label="order_parse")
    if not isinstance(result, ParsedInput):
        result = ParsedInput.model_validate(result.model_dump())
    return result


def parse_order(
    text: str,
    menu: Menu,
    tree: OrderTask | None = None,
    mode: ParseMode = "auto",
    llm: StructuredLLM | None = None,
    threshold: float = DEFAULT_THRESHOLD,
) -> ParsedInput:
    """Parse a customer message: deterministic, LLM, or auto (deterministic first, LLM when unsure)."""
    if mode == "llm":
        if llm is None:
            raise ValueError("mode='llm' needs an llm")
        return parse_with_llm(text, menu, tree, llm)
    parsed = parse_deterministic(text, menu, tree)
    if mode == "deterministic" or llm is None:
        return parsed
    if parsed.confidence >= threshold and not parsed.unparsed:
        return parsed
    try:
        return parse_with_llm(text, menu, tree, llm)
    except OrderParseError as exc:
        log.warning("LLM parse failed, keeping the deterministic parse: %s", exc)
        return parsed
