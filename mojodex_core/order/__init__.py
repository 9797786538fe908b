"""Order-capture engine: menus, task tree, parsers and the deterministic conversation state.

Pure library (no Flask, DB or network). Typical turn::

    menu = load_menu("tasks_config/menus/bagel_shop.json")
    tree = new_order(menu.id)
    parsed = parse_order(text, menu, tree)            # deterministic, LLM fallback when given one
    tree, diff = update_state(tree, parsed, menu)     # new tree, audit diff (+ errors)
    action = get_next_action(tree, menu)              # action.text is the bot reply
"""

from .exr import to_exr, unordered_equal
from .flow import Action, AskAction, CheckoutAction, CompleteAction, PaymentAction, get_next_action
from .llm_parser import StructuredLLM, build_messages, parse_order
from .menu import Menu, MenuError, get_menu, load_menu
from .parsed_input import Modification, OrderParseError, ParsedInput, ParsedItem
from .parser import parse_deterministic
from .state import DiffOp, StateDiff, update_state
from .tree import ItemTask, OrderError, OrderTask, new_order

__all__ = [
    "Action", "AskAction", "CheckoutAction", "CompleteAction", "DiffOp", "ItemTask", "Menu", "MenuError",
    "Modification", "OrderError", "OrderParseError", "OrderTask", "ParsedInput",
    "ParsedItem", "PaymentAction", "StateDiff", "StructuredLLM", "build_messages", "get_menu",
    "get_next_action", "load_menu", "new_order", "parse_deterministic", "parse_order", "to_exr",
    "unordered_equal", "update_state",
]
