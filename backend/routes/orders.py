"""Order tasks: menus (admin), stock, the live order, global events and the audit log."""

from __future__ import annotations

import logging
from functools import wraps
from typing import Callable

from flask import g, request
from flask_restful import Resource

from backend import api_models as m
from backend.auth import (
    admin_required,
    is_admin_secret,
    require_admin,
    require_user,
    token_from_header,
    user_required,
)
from backend.context import platform
from backend.errors import ApiError, bad_request, not_found
from backend.routes._input import execution_task, field, json_body, owned_execution, query_int
from backend.routes._submit import submit_turn
from backend.validation import ADMIN, USER, api
from mojodex_core.db.models import OrderSession
from mojodex_core.execution.jobs import TurnJob
from mojodex_core.home_chat.service import another_turn_in_line
from mojodex_core.order_runtime import service
from mojodex_core.order_runtime.intake import CLIENT_EVENTS, OrderFinished, accept_event
from mojodex_core.order_runtime.menus import (
    MenuInvalid,
    MenuNotFound,
    StockError,
    check_stock_item,
    in_use_missing_from,
    set_stock,
    store_menu,
    validate_menu,
)

log = logging.getLogger("mojodex.orders")


def user_or_admin(fn: Callable) -> Callable:
    """Menus are readable by the admin and by any signed-in user (they are what a shop shows)."""

    @wraps(fn)
    def wrapper(*args, **kwargs):  # noqa: ANN002, ANN003
        given = token_from_header(request.headers.get("Authorization"))
        if is_admin_secret(given):
            require_admin(given)  # counted against the admin limit
            g.user = None
            return fn(*args, **kwargs)
        g.user = require_user(given)
        return fn(*args, **kwargs)

    return wrapper


def owned_order(db, pk: int) -> tuple:  # noqa: ANN001
    """The caller's execution of an order task and its conversation row, or 404."""
    execution = owned_execution(db, pk)
    row = db.get(OrderSession, pk)
    if row is None:
        task_type = execution_task(db, execution).type
        raise bad_request(f"this execution is not an order (its task type is {task_type!r})",
                          field="user_task_execution_pk")
    return execution, row


class MenuResource(Resource):
    @admin_required
    @api.validate(json=m.MenuBody, resp=m.answers(m.MenuStoredOut), security=ADMIN, tags=["orders"],
                  skip_validation=True)
    def put(self):  # noqa: ANN201
        data = request.get_json(silent=True)
        try:
            menu = validate_menu(data)
        except MenuInvalid as exc:
            raise ApiError(400, str(exc), errors=exc.errors) from exc
        current = platform()
        shipped = current.settings.tasks_config_dir / "menus" / f"{menu.id}.json"
        if shipped.exists():
            # An upload would shadow the shipped file for readers while running orders keep the file's
            # menu: two menus under one id. Upload under another id instead.
            raise ApiError(409, f"menu id {menu.id!r} is a shipped menu (tasks_config/menus/{menu.id}.json): "
                                "upload it under another id", field="id")
        with current.db() as db:
            removed = in_use_missing_from(db, menu)
            if removed:
                raise ApiError(409, f"live orders on menu {menu.id!r} still have {', '.join(sorted(removed))}: "
                                    "keep them on the menu (mark them out of stock instead)", field="item_types")
            created = store_menu(db, menu)
        log.info("menu %s %s by admin", menu.id, "created" if created else "replaced")
        return {"menu_id": menu.id, "created": created, "item_types": sorted(menu.item_types)}, 200

    @user_or_admin
    @api.validate(query=m.MenuQuery, resp=m.answers(m.MenuOut), security=[USER, ADMIN], tags=["orders"])
    def get(self):  # noqa: ANN201
        menu_id = request.args.get("menu_id")
        if not menu_id:
            raise bad_request("menu_id is required", field="menu_id")
        current = platform()
        with current.db() as db:
            try:
                menu = current.menus.with_stock(db, current.menus.menu_by_id(db, menu_id))
            except MenuNotFound as exc:
                raise not_found("menu") from exc
            return {"menu_id": menu.id, "menu": menu.model_dump(mode="json")}, 200


class MenuAvailabilityResource(Resource):
    method_decorators = [admin_required]

    @api.validate(json=m.StockBody, resp=m.answers(m.StockOut), security=ADMIN, tags=["orders"])
    def put(self):  # noqa: ANN201
        body = json_body()
        menu_id = field(body, "menu_id", str)
        item_type = field(body, "item_type", str)
        field_name = field(body, "field", str, None)
        value = field(body, "value", str, None)
        in_stock = body.get("in_stock")
        if not isinstance(in_stock, bool):
            raise bad_request("in_stock must be true or false", field="in_stock")
        current = platform()
        with current.db() as db:
            try:
                menu = current.menus.menu_by_id(db, menu_id)
                value = check_stock_item(menu, item_type, field_name, value)  # the value's id
                set_stock(db, menu, item_type, field_name, value, in_stock)
            except MenuNotFound as exc:
                raise not_found("menu") from exc
            except StockError as exc:
                raise bad_request(str(exc), field=exc.field) from exc
            affected = service.affected_sessions(db, menu.id, item_type, field_name, value, in_stock)
        raised = []
        for session_id, pk, item in affected:
            try:
                message_pk = accept_event(
                    current.session_factory, current.events, session_id=session_id, user_task_execution_pk=pk,
                    event="out_of_stock", item=item,
                )
            except OrderFinished:
                continue
            # Refused: this event fails and the route answers 503 (the stock change is kept; the
            # conversations after this one get no out_of_stock until it is sent again).
            submit_turn(current, TurnJob(session_id=session_id, message_pk=message_pk))
            raised.append(pk)
        log.info("menu %s: %s %s %s in_stock=%s (out_of_stock raised in %d conversation(s))",
                 menu_id, item_type, field_name, value, in_stock, len(raised))
        return {
            "menu_id": menu_id, "item_type": item_type, "field": field_name, "value": value, "in_stock": in_stock,
            "out_of_stock_raised": raised,
        }, 200


class OrderResource(Resource):
    method_decorators = [user_required]

    @api.validate(query=m.ExecutionPkQuery, resp=m.answers(m.OrderOut), security=USER, tags=["orders"])
    def get(self):  # noqa: ANN201
        pk = query_int("user_task_execution_pk")
        current = platform()
        with current.db() as db:
            owned_order(db, pk)
            try:
                return service.snapshot(db, current.menus, pk), 200
            except MenuNotFound as exc:
                raise ApiError(409, f"the menu of this order is not available: {exc}") from exc


class OrderEventResource(Resource):
    method_decorators = [user_required]

    @api.validate(json=m.OrderEventBody, resp=m.answers(m.OrderEventOut), security=USER, tags=["orders"])
    def post(self):  # noqa: ANN201
        body = json_body()
        pk = field(body, "user_task_execution_pk", int)
        event = field(body, "event", str)
        item = field(body, "item", dict, None)
        if event not in CLIENT_EVENTS:
            raise bad_request(f"event must be one of: {', '.join(CLIENT_EVENTS)}", field="event")
        if event == "out_of_stock":
            if item is None or not isinstance(item.get("item_type"), str):
                raise bad_request("item {item_type, field?, value?} is required for out_of_stock", field="item")
            item = {"item_type": item["item_type"], "field": item.get("field"), "value": item.get("value")}
        elif item is not None:
            raise bad_request("item is only allowed with out_of_stock", field="item")
        current = platform()
        with current.db() as db:
            execution, row = owned_order(db, pk)
            session_id = execution.session_id
            if row.state == "Idle":
                raise ApiError(409, "this order is finished (the conversation is Idle): start a new one")
            if item is not None:
                # What is out of stock must be on this order's menu: the turn proposes alternatives from it.
                try:
                    item["value"] = check_stock_item(current.menus.base_menu(db, row.menu_ref), **item)
                except MenuNotFound as exc:
                    raise ApiError(409, f"the menu of this order is not available: {exc}") from exc
                except StockError as exc:
                    raise bad_request(str(exc), field=f"item.{exc.field}") from exc
            # The reply being produced is dropped, when it is this order's: in a home chat's session the
            # turn in line may be the free chat's or another task's (as POST /user_task_execution_stop).
            barge_in = event == "barge_in" and not another_turn_in_line(db, session_id, pk)
        if barge_in:
            current.runner.cancel(session_id)
        try:
            message_pk = accept_event(
                current.session_factory, current.events, session_id=session_id, user_task_execution_pk=pk,
                event=event, item=item,
            )
        except OrderFinished as exc:
            raise ApiError(409, str(exc)) from exc
        submit_turn(current, TurnJob(session_id=session_id, message_pk=message_pk))
        return {"user_task_execution_pk": pk, "event": event, "message_pk": message_pk, "status": "pending"}, 200


class OrderAuditResource(Resource):
    method_decorators = [user_required]

    @api.validate(query=m.ExecutionPkQuery, resp=m.answers(m.AuditOut), security=USER, tags=["orders"])
    def get(self):  # noqa: ANN201
        pk = query_int("user_task_execution_pk")
        with platform().db() as db:
            owned_order(db, pk)
            return {"user_task_execution_pk": pk, "turns": service.audit(db, pk)}, 200
