"""The order task tree (pydantic, JSON round-trippable).

The tree is self-contained: item tasks carry the names of their required fields,
the fields filled from menu defaults and rendered display strings, so progress,
summaries and missing fields can be computed (and shown in a UI) without the menu.
Only :mod:`mojodex_core.order.state` mutates trees, and it always works on copies.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

Status = Literal["pending", "in_progress", "complete", "skipped"]
PaymentMethod = Literal["in_store", "cash_delivery", "card_link"]
TaskName = Literal["item", "order_type", "address", "checkout", "customer_name", "customer_contact", "payment"]

_ICONS = {"complete": "[x]", "in_progress": "[~]", "pending": "[ ]", "skipped": "[-]"}


def _empty(value: Any) -> bool:
    return value is None or value == [] or value == ""


class PendingQuestion(BaseModel):
    """The question the bot is waiting on (set by update_state, read by the parser)."""

    task: TaskName
    item_index: int | None = None
    field: str | None = None
    optional: bool = False


class OrderError(BaseModel):
    """Something the customer asked for that could not go into the order; named for the reply."""

    kind: Literal["not_on_menu", "out_of_stock", "quantity_out_of_range", "invalid_value", "not_understood",
                  "unknown_item", "too_many_lines"]
    subject: str  # what the customer said / asked for, used verbatim in the reply
    message: str


class TurnNotes(BaseModel):
    """What the last update did, for the reply template (acknowledgements and errors)."""

    added: list[int] = Field(default_factory=list)
    modified: list[int] = Field(default_factory=list)
    cancelled: list[int] = Field(default_factory=list)
    previous_pending: PendingQuestion | None = None
    errors: list[OrderError] = Field(default_factory=list)
    order_cancelled: bool = False


class ItemTask(BaseModel):
    item_type: str
    label: str
    fields: dict[str, Any] = Field(default_factory=dict)
    required: list[str] = Field(default_factory=list)
    defaulted: list[str] = Field(default_factory=list)  # filled from menu defaults, not said by the customer
    asked: list[str] = Field(default_factory=list)  # optional questions already offered (asked once)
    status: Status = "pending"
    unit_price: float = 0.0
    short: str = ""
    summary: str = ""

    @property
    def quantity(self) -> int:
        return int(self.fields.get("quantity") or 1)

    @property
    def line_total(self) -> float:
        return 0.0 if self.status == "skipped" else round(self.unit_price * self.quantity, 2)

    def get_missing_fields(self) -> list[str]:
        if self.status == "skipped":
            return []
        return [f for f in self.required if _empty(self.fields.get(f))]

    def get_progress(self) -> float:
        if self.status in ("complete", "skipped") or not self.required:
            return 1.0
        filled = len(self.required) - len(self.get_missing_fields())
        return round(filled / len(self.required), 3)

    def get_display_summary(self) -> str:
        return f"{self.summary or self.label} (${self.line_total:.2f})"


class AddressTask(BaseModel):
    street: str | None = None
    city: str | None = None
    zip: str | None = None
    status: Status = "pending"


class DeliveryMethodTask(BaseModel):
    status: Status = "pending"
    order_type: Literal["pickup", "delivery"] | None = None
    address: AddressTask | None = None

    def get_missing_fields(self) -> list[str]:
        if self.order_type is None:
            return ["order_type"]
        if self.order_type == "delivery" and (self.address is None or not self.address.street):
            return ["address"]
        return []

    def get_progress(self) -> float:
        return 1.0 if not self.get_missing_fields() else (0.5 if self.order_type else 0.0)

    def get_display_summary(self) -> str:
        if self.order_type == "delivery" and self.address and self.address.street:
            return f"Delivery to {self.address.street}"
        labels = {"pickup": "Pickup", "delivery": "Delivery (address needed)"}
        return labels.get(self.order_type or "", "Delivery method")


class ItemsTask(BaseModel):
    status: Status = "pending"
    items: list[ItemTask] = Field(default_factory=list)

    def active(self) -> list[tuple[int, ItemTask]]:
        return [(i, it) for i, it in enumerate(self.items) if it.status != "skipped"]

    def get_missing_fields(self) -> list[str]:
        out = [] if self.active() else ["items"]
        for i, it in enumerate(self.items):
            out.extend(f"items[{i}].{f}" for f in it.get_missing_fields())
        return out

    def get_progress(self) -> float:
        act = self.active()
        return round(sum(it.get_progress() for _, it in act) / len(act), 3) if act else 0.0

    def get_display_summary(self) -> str:
        return "; ".join(it.get_display_summary() for _, it in self.active()) or "No items yet"


class CustomerInfoTask(BaseModel):
    status: Status = "pending"
    name: str | None = None
    contact: str | None = None

    def get_missing_fields(self) -> list[str]:
        return [f for f in ("name", "contact") if not getattr(self, f)]

    def get_progress(self) -> float:
        return round(1 - len(self.get_missing_fields()) / 2, 3)

    def get_display_summary(self) -> str:
        return " / ".join(x for x in (self.name, self.contact) if x) or "Customer info"


class CheckoutTask(BaseModel):
    status: Status = "pending"
    order_reviewed: bool = False
    confirmed: bool = False

    def get_missing_fields(self) -> list[str]:
        return [] if self.confirmed else ["confirmed"]

    def get_progress(self) -> float:
        return 1.0 if self.confirmed else (0.5 if self.order_reviewed else 0.0)

    def get_display_summary(self) -> str:
        return "Order confirmed" if self.confirmed else "Review and confirm"


class PaymentTask(BaseModel):
    status: Status = "pending"
    method: PaymentMethod | None = None

    def get_missing_fields(self) -> list[str]:
        return [] if self.method else ["method"]

    def get_progress(self) -> float:
        return 1.0 if self.method else 0.0

    def get_display_summary(self) -> str:
        return {"in_store": "Pay in store", "cash_delivery": "Cash on delivery",
                "card_link": "Card payment link"}.get(self.method or "", "Payment")


class OrderTask(BaseModel):
    """Root of the tree; persisted as JSON by the conversation layer."""

    menu_id: str
    currency: str = "USD"
    status: Status = "pending"
    delivery_method: DeliveryMethodTask = Field(default_factory=DeliveryMethodTask)
    items: ItemsTask = Field(default_factory=ItemsTask)
    customer_info: CustomerInfoTask = Field(default_factory=CustomerInfoTask)
    checkout: CheckoutTask = Field(default_factory=CheckoutTask)
    payment: PaymentTask = Field(default_factory=PaymentTask)
    pending: PendingQuestion | None = None
    last_turn: TurnNotes = Field(default_factory=TurnNotes)
    turn: int = 0

    def _children(self) -> list[tuple[str, Any]]:
        return [("items", self.items), ("delivery_method", self.delivery_method),
                ("checkout", self.checkout), ("customer_info", self.customer_info), ("payment", self.payment)]

    def total(self) -> float:
        return round(sum(it.line_total for it in self.items.items), 2)

    def get_missing_fields(self) -> list[str]:
        out: list[str] = []
        for name, task in self._children():
            prefix = "" if name == "items" else f"{name}."
            out.extend(f"{prefix}{f}" for f in task.get_missing_fields())
        return out

    def get_progress(self) -> float:
        """Share of the five sub-tasks done, items counted by their own progress."""
        return round(sum(task.get_progress() for _, task in self._children()) / 5, 3)

    def get_display_summary(self) -> str:
        lines = ["Order Progress"]
        for _, it in self.items.active():
            lines.append(f"  {_ICONS[it.status]} {it.get_display_summary()}")
            if it.status == "in_progress":
                lines.extend(f"      ? {f}" for f in it.get_missing_fields())
        for _name, task in self._children()[1:]:
            lines.append(f"  {_ICONS[task.status]} {task.get_display_summary()}")
        lines.append(f"  Total: ${self.total():.2f}")
        return "\n".join(lines)

    def to_json(self) -> str:
        return self.model_dump_json()

    @classmethod
    def from_json(cls, data: str | bytes) -> OrderTask:
        return cls.model_validate_json(data)


def new_order(menu_id: str, currency: str = "USD") -> OrderTask:
    return OrderTask(menu_id=menu_id, currency=currency)
