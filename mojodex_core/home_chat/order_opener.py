"""Opening an order the home chat routed to: its conversation, as PUT /user_task_execution opens it."""

from __future__ import annotations

from sqlalchemy.orm import Session as DbSession

from mojodex_core.db.models import Task, UserTaskExecution
from mojodex_core.home_chat.turn import Opener, TaskUnavailable
from mojodex_core.order.conversation.resources import supported_language
from mojodex_core.order_runtime.menus import MenuCatalog, MenuNotFound
from mojodex_core.order_runtime.service import open_order
from mojodex_core.order_runtime.store import LiveStateStore


def order_opener(menus: MenuCatalog, store: LiveStateStore) -> Opener:
    """The home chat's opener of order tasks, on the platform's menus and live store."""

    def open_routed_order(db: DbSession, execution: UserTaskExecution, task: Task, language: str) -> None:
        try:  # in the user's language when the order has its texts, else English
            open_order(db, execution, task, menus, store, supported_language(language) or "en")
        except MenuNotFound as exc:  # PUT /user_task_execution's 409
            raise TaskUnavailable(f"the menu of this order task is not available: {exc}") from exc

    return open_routed_order
