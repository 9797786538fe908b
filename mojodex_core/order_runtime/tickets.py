"""Tickets: the order frozen at Closing, stored as a produced text, delivered to the shop's POS.

Delivery POSTs the ticket JSON to the task spec's ``pos_webhook_url`` off the turn's thread,
with bounded attempts and exponential backoff. Every attempt of one ticket carries the same
``Idempotency-Key`` header, and ``X-Mojodex-Signature: sha256=<hex>``, the HMAC-SHA256 of the
exact body bytes with the platform's webhook secret, so the receiver can check who sent it.
The outcome of each attempt is written to the ticket row (GET /order shows it).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import secrets
import threading
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from typing import Any, Callable

from sqlalchemy import select
from sqlalchemy.orm import Session as DbSession
from sqlalchemy.orm import sessionmaker

from mojodex_core.db import transaction
from mojodex_core.db.models import OrderTicket, UserTaskExecution
from mojodex_core.execution.produced_text import append_version
from mojodex_core.timestamps import iso_utc

log = logging.getLogger("mojodex.order.tickets")

IDEMPOTENCY_HEADER = "Idempotency-Key"
SIGNATURE_HEADER = "X-Mojodex-Signature"
TICKET_ID_HEADER = "X-Mojodex-Ticket-Id"

# (url, body, headers, timeout_s) -> HTTP status; raises on a network error.
Poster = Callable[[str, bytes, dict[str, str], float], int]


def sign(secret: str, body: bytes) -> str:
    return "sha256=" + hmac.new(secret.encode("utf-8"), body, hashlib.sha256).hexdigest()


def verify(secret: str, body: bytes, signature: str) -> bool:
    return hmac.compare_digest(sign(secret, body), signature or "")


def ticket_body(ticket: OrderTicket) -> bytes:
    """The exact bytes POSTed (and signed): the same on every attempt."""
    payload = {
        "ticket_id": ticket.idempotency_key,
        "user_task_execution_pk": ticket.user_task_execution_fk,
        "created_at": iso_utc(ticket.created_at),
        **ticket.ticket,
    }
    return json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def create_ticket(
    db: DbSession,
    execution: UserTaskExecution,
    user_id: str,
    ticket: dict[str, Any],
    *,
    webhook_url: str | None,
    text_type_fk: int | None,
    message_pk: int | None,
    title: str,
) -> OrderTicket:
    """Stores the ticket text as the execution's next produced text version, and the ticket row."""
    version = append_version(
        db, execution, user_id, title=title, production=ticket.get("text") or "", origin="assistant",
        text_type_fk=text_type_fk, message_pk=message_pk,
    )
    row = OrderTicket(
        user_task_execution_fk=execution.user_task_execution_pk,
        produced_text_version_fk=version.produced_text_version_pk,
        ticket=ticket,
        lines=ticket.get("lines") or [],
        total=float(ticket.get("total") or 0.0),
        currency=str(ticket.get("currency") or "USD")[:8],
        idempotency_key=secrets.token_hex(16),
        webhook_url=webhook_url,
        delivery_status="pending" if webhook_url else "none",
    )
    db.add(row)
    db.flush()
    return row


def ticket_view(ticket: OrderTicket | None) -> dict[str, Any] | None:
    if ticket is None:
        return None
    return {
        "order_ticket_pk": ticket.order_ticket_pk,
        "ticket_id": ticket.idempotency_key,
        "produced_text_version_pk": ticket.produced_text_version_fk,
        "lines": ticket.lines,
        "total": ticket.total,
        "currency": ticket.currency,
        "text": (ticket.ticket or {}).get("text"),
        "ticket": ticket.ticket,
        "created_at": iso_utc(ticket.created_at),
        "delivery": {
            "status": ticket.delivery_status,
            "attempts": ticket.delivery_attempts,
            "last_error": ticket.delivery_last_error,
            "delivered_at": iso_utc(ticket.delivered_at),
            "webhook_url": ticket.webhook_url,
        },
    }


def urllib_post(url: str, body: bytes, headers: dict[str, str], timeout_s: float) -> int:
    request = urllib.request.Request(url, data=body, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as response:  # noqa: S310 (http(s) only: spec rule)
            return response.status
    except urllib.error.HTTPError as exc:
        return exc.code


class TicketDelivery:
    """Delivers tickets to POS webhooks in background threads, with retries."""

    def __init__(
        self,
        factory: sessionmaker[DbSession],
        secret: str,
        *,
        attempts: int = 5,
        backoff_s: float = 1.0,
        timeout_s: float = 5.0,
        post: Poster = urllib_post,
        max_workers: int = 4,
    ) -> None:
        self._factory = factory
        self._secret = secret
        self.attempts = attempts
        self.backoff_s = backoff_s
        self.timeout_s = timeout_s
        self._post = post
        self._pool = ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="pos-webhook")
        self._stop = threading.Event()

    def deliver_later(self, order_ticket_pk: int) -> None:
        if not self._stop.is_set():
            self._pool.submit(self._deliver_logged, order_ticket_pk)

    def resume(self) -> int:
        """Tickets whose delivery a stopped process left unfinished are delivered again."""
        with self._factory() as db:
            pks = list(db.scalars(select(OrderTicket.order_ticket_pk).where(
                OrderTicket.delivery_status.in_(("pending", "retrying")))))
        for pk in pks:
            self.deliver_later(pk)
        return len(pks)

    def _deliver_logged(self, order_ticket_pk: int) -> None:
        try:
            self.deliver(order_ticket_pk)
        except Exception:
            log.exception("ticket %s: delivery crashed", order_ticket_pk)

    def deliver(self, order_ticket_pk: int) -> str:
        """Runs the attempts left for this ticket; returns the final delivery status."""
        with self._factory() as db:
            ticket = db.get(OrderTicket, order_ticket_pk)
            if ticket is None or ticket.delivery_status not in ("pending", "retrying") or not ticket.webhook_url:
                return ticket.delivery_status if ticket else "none"
            url, done = ticket.webhook_url, ticket.delivery_attempts
            body = ticket_body(ticket)
            key = ticket.idempotency_key
        headers = {
            "Content-Type": "application/json",
            IDEMPOTENCY_HEADER: key,
            TICKET_ID_HEADER: key,
            SIGNATURE_HEADER: sign(self._secret, body),
        }
        for attempt in range(done + 1, self.attempts + 1):
            error: str | None = None
            try:
                status = self._post(url, body, headers, self.timeout_s)
                if not 200 <= status < 300:
                    error = f"HTTP {status}"
            except Exception as exc:  # network errors: refused, timeout, DNS...
                error = f"{type(exc).__name__}: {exc}"[:500]
            final = error is None or attempt == self.attempts
            status_name = "delivered" if error is None else ("failed" if final else "retrying")
            with transaction(self._factory) as db:
                row = db.get(OrderTicket, order_ticket_pk)
                row.delivery_attempts = attempt
                row.delivery_status = status_name
                row.delivery_last_error = error
                if error is None:
                    row.delivered_at = datetime.now(UTC)
            if error is None:
                log.info("ticket %s delivered to %s (attempt %d)", order_ticket_pk, url, attempt)
                return "delivered"
            log.warning("ticket %s: delivery attempt %d/%d to %s failed: %s",
                        order_ticket_pk, attempt, self.attempts, url, error)
            if final or self._stop.wait(self.backoff_s * 2 ** (attempt - 1)):
                return status_name
        return "failed"

    def shutdown(self) -> None:
        self._stop.set()
        self._pool.shutdown(wait=False, cancel_futures=True)
