"""The parser's output: the seed's ``ParsedInput`` shape plus confidence and unparsed words.

Field values inside ``ParsedItem.fields`` / ``answers`` / ``Modification.new_value``
use the menu's value ids:

* single choice fields hold the value id (``"size": "LARGE"``), bool fields a bool,
  ``quantity`` an int;
* multi fields hold a list of ids (``"extras": ["lox"]``), except fields declared
  with ``qualifiers: true`` (pizza toppings) whose entries are objects
  ``{"name": "CHEESE", "quantity": "EXTRA"}`` (``quantity`` omitted when unqualified);
* negation of a ``negatable`` field goes to ``excluded_<field>`` with the same entry
  shape (``"excluded_toppings": [{"name": "ONIONS"}]``, ``"excluded_style": ["THIN_CRUST"]``);
  a negated bool value flips it (``not toasted`` -> ``"toasted": false``).
* in ``answers`` a ``None`` value declines an optional question ("no thanks").
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field
from pydantic.json_schema import SkipJsonSchema


class OrderParseError(RuntimeError):
    """The input could not be turned into a valid ParsedInput (e.g. LLM output invalid twice)."""


class ParsedItem(BaseModel):
    """A parsed item from user input."""

    item_type: str = Field(description="An item type declared by the menu (e.g. 'pizza', 'bagel').")
    fields: dict[str, Any] = Field(default_factory=dict, description="Field name -> value id(s).")


class Modification(BaseModel):
    """A modification to an existing item."""

    item_index: int | None = Field(default=None, description="Index in the order; None = current/last item.")
    item_type: str | None = Field(default=None, description="Or identify the item by its type.")
    field: str
    new_value: Any = None


class ReferenceDoubt(BaseModel):
    """A change asked of an item the parser could not find ("make the fourth one small" with two items, "make the
    second one thin crust" when the second is a coke), or of one of several ("make it small" with two pizzas):
    what was said, and the values per item type that takes them, so that the caller can ask "which one?" and apply
    the change to the answer."""

    said: str
    fields: dict[str, dict[str, Any]] = Field(default_factory=dict)
    # the live items it could be ("remove the bacon" with two bagels holding bacon): "both" answers all of them
    items: list[int] = Field(default_factory=list)
    # no item ordered takes it ("honey" after a bagel, "pepperoni on the large pizza" with a coke only): no new line
    # was guessed, the caller may offer one (the values per item type are the new item's)
    new_item: bool = False
    # a field cleared as a whole ("no spread" after a latte, "no toppings" with none on any line): no line has
    # anything in it to take off, nor may still get some - said back, no item offered
    nothing_held: bool = False


class ParsedInput(BaseModel):
    """Structured reading of one customer message."""

    new_items: list[ParsedItem] = Field(default_factory=list)
    modifications: list[Modification] = Field(default_factory=list)
    answers: dict[str, Any] = Field(default_factory=dict)
    wants_checkout: bool = False
    wants_cancel: bool = False
    cancel_item_index: int | None = None
    cancel_item: str | None = Field(
        default=None, description="What the customer asked to remove, as said (names it when it isn't in the order)."
    )
    order_type: Literal["pickup", "delivery"] | None = None
    address: str | None = None
    customer_name: str | None = None
    customer_contact: str | None = None
    repeat_last: bool = Field(
        default=False, description="The customer asked for the last line again ('same again'); not built here."
    )
    reference: SkipJsonSchema[ReferenceDoubt | None] = Field(
        default=None, description="Deterministic parser only (not in the LLM schema): a change by reference to no item."
    )
    reasoning: str | None = Field(
        default=None,
        description="LLM parser only: one sentence on why the message was read this way (the reasoning trace).",
    )
    confidence: float = Field(default=1.0, ge=0.0, le=1.0)
    unparsed: list[str] = Field(
        default_factory=list, description="Spans of words that could not be resolved against the menu."
    )

    def is_empty(self) -> bool:
        return not (
            self.new_items
            or self.modifications
            or self.answers
            or self.wants_checkout
            or self.wants_cancel
            or self.cancel_item_index is not None
            or self.cancel_item
            or self.order_type
            or self.address
            or self.customer_name
            or self.customer_contact
            or self.repeat_last
        )
