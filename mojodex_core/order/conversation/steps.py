"""What the conversation asks next, and how each question is worded (from the resource files).

Order of business: the items (their missing required fields, then optional questions, as in ``flow.py``),
then pickup/delivery and the address, then - in Ordering - the next-step prompt of seed 003 ("anything
else?"). Name, contact and payment are asked within Confirming, one question per turn, before the single
whole-order read-back ("checkout").
"""

from __future__ import annotations

from dataclasses import dataclass

from ..flow import next_question, payment_options
from ..menu import Menu
from ..render import lower_first
from ..tree import OrderTask, PendingQuestion
from .menu_index import suggestions
from .model import Conversation
from .resources import join_list, money, say
from .views import _fulfilment, _payment, item_text


@dataclass(frozen=True)
class Step:
    key: str  # "order", "item:0:size", "order_type", "address", "next_step", "customer_name", ..., "checkout"
    pending: PendingQuestion | None


def _open(tree: OrderTask, q: PendingQuestion) -> bool:
    idx = q.item_index
    if idx is None or not 0 <= idx < len(tree.items.items) or tree.items.items[idx].status == "skipped":
        return False
    return tree.items.items[idx].fields.get(q.field or "") in (None, [], "")


def next_step(tree: OrderTask, menu: Menu, state: str) -> Step:
    if not tree.items.active():
        return Step("order", None)
    q = tree.pending  # update_state's choice (it marks optional questions as offered when it picks them)
    if q is None or q.task != "item" or not _open(tree, q):
        q = next_question(tree, menu)
    if q is not None and q.task == "item":
        return Step(f"item:{q.item_index}:{q.field}", q)
    dm = tree.delivery_method
    if dm.order_type is None:
        return Step("order_type", PendingQuestion(task="order_type"))
    if dm.get_missing_fields():
        return Step("address", PendingQuestion(task="address"))
    if state != "Confirming":
        return Step("next_step", None)
    for task, missing in (("customer_name", not tree.customer_info.name),
                          ("customer_contact", not tree.customer_info.contact),
                          ("payment", not tree.payment.method)):
        if missing:
            return Step(task, PendingQuestion(task=task))  # type: ignore[arg-type]
    return Step("checkout", PendingQuestion(task="checkout"))


def item_question(tree: OrderTask, menu: Menu, q: PendingQuestion, lang: str) -> tuple[str, str]:
    """(response key, text) of an item field question; menu texts for ``en``, per-language menu texts or the
    generic resource question otherwise."""
    item = tree.items.items[q.item_index or 0]
    fdef = menu.item_types[item.item_type].fields[q.field or ""]
    name = item.short or item.label
    if lang in fdef.questions:
        key, text = "menu-question", fdef.questions[lang].format(item=name)
    elif lang == "en" and fdef.question:
        key, text = "menu-question", fdef.question.format(item=name)
    elif fdef.kind == "bool":
        return "ask-field-bool", say(lang, "ask-field-bool", item=name, label=fdef.true_label or q.field)
    else:
        key, text = "ask-field-generic", say(lang, "ask-field-generic", item=name, field=str(q.field).replace("_", " "))
    # A menu's question is fixed text: it may offer a value marked out of stock since, so it says which are.
    gone = [v.display for v in fdef.values if not v.in_stock]
    if gone:
        text = " ".join((text, say(lang, "ask-field-out-of-stock", values=join_list(lang, gone))))
    return key, text


def options_question(tree: OrderTask, menu: Menu, step: Step, lang: str) -> tuple[str, str]:
    """The clarifying form of a question: the same thing asked differently, with its concrete options."""
    q = step.pending
    if q is not None and q.task == "item" and q.field:
        item = tree.items.items[q.item_index or 0]
        fdef = menu.item_types[item.item_type].fields[q.field]
        if fdef.kind == "bool":
            opts = [fdef.true_label or "yes", fdef.false_label or "no"]
        else:
            opts = [v.display for v in fdef.values if v.in_stock][:5]
        return "ask-field-options", say(lang, "ask-field-options", field=q.field.replace("_", " "),
                                        item=item.short or item.label,
                                        options=join_list(lang, opts, "word-or"))
    if step.key == "order_type":
        return "ask-order-type-options", say(lang, "ask-order-type-options")
    if step.key == "checkout":
        return "confirm-yes-no", say(lang, "confirm-yes-no")
    if step.key in ("customer_name", "customer_contact", "address"):
        key = "clarify-" + step.key.replace("_", "-")
        return key, say(lang, key)
    if step.key == "payment":
        opts = [say(lang, f"payment-{o}") for o in payment_options(tree)]
        return "ask-payment-options", say(lang, "ask-payment-options", options=join_list(lang, opts, "word-or"))
    if step.key in ("order", "next_step"):
        names = suggestions(menu)
        return "start-order-prompt", say(lang, "start-order-prompt", suggestions=join_list(lang, names, "word-or"))
    key, text = question_text(tree, menu, step, lang, None)
    return "ask-generic-options", say(lang, "ask-generic-options", what=lower_first(text.rstrip("?")))


def step_example(tree: OrderTask, menu: Menu, step: Step, lang: str) -> str | None:
    """A concrete answer to the question of ``step`` (for pattern hints)."""
    if step.key == "payment":
        return say(lang, f"payment-{payment_options(tree)[0]}")
    if step.key == "order_type":
        return say(lang, "order-type-pickup")
    examples = {"customer_name": "example-customer-name", "customer_contact": "example-customer-contact"}
    if step.key in examples:
        return say(lang, examples[step.key])
    return None


def next_step_prompt(tree: OrderTask, menu: Menu, lang: str) -> tuple[str, str]:
    """Seed 003's next-step prompts, chosen from the roles of the items ordered."""
    roles = {menu.item_types[it.item_type].role for _, it in tree.items.active() if it.item_type in menu.item_types}
    has_side, has_drink = "side" in roles, "drink" in roles
    if "main" in roles and not has_side and not has_drink:
        names = suggestions(menu, ("side", "drink"))
        if names:
            return "next-step-only-main-ordered", say(lang, "next-step-only-main-ordered",
                                                      suggestions=join_list(lang, names, "word-or"))
    if "main" in roles and has_side and not has_drink:
        names = suggestions(menu, ("drink",))
        if names:
            return "next-step-main-and-side-ordered", say(lang, "next-step-main-and-side-ordered",
                                                          suggestions=join_list(lang, names, "word-or"))
    return "next-step-generic", say(lang, "next-step-generic")


def summary_text(tree: OrderTask, lang: str) -> str:
    parts = [item_text(it) for _, it in tree.items.active()]
    return join_list(lang, parts)


def question_text(tree: OrderTask, menu: Menu, step: Step, lang: str,
                  conv: Conversation | None) -> tuple[str, str]:
    """(response key, text) asking ``step``."""
    if step.key == "order":
        return "ask-order", say(lang, "ask-order")
    if step.pending is not None and step.pending.task == "item":
        return item_question(tree, menu, step.pending, lang)
    if step.key == "next_step":
        return next_step_prompt(tree, menu, lang)
    if step.key == "order_type":
        return "ask-order-type", say(lang, "ask-order-type")
    if step.key == "address":
        return "ask-address", say(lang, "ask-address")
    if step.key == "customer_name":
        return "ask-customer-name", say(lang, "ask-customer-name")
    if step.key == "customer_contact":
        return "ask-customer-contact", say(lang, "ask-customer-contact")
    if step.key == "payment":
        opts = [say(lang, f"payment-{o}") for o in payment_options(tree)]
        return "ask-payment", say(lang, "ask-payment", options=join_list(lang, opts, "word-or"))
    currency = tree.currency or menu.currency
    return "confirm-summary", say(lang, "confirm-summary", summary=summary_text(tree, lang),
                                  fulfilment=_fulfilment(tree, lang), payment=_payment(tree, lang),
                                  name=tree.customer_info.name or "", total=money(lang, tree.total(), currency))
