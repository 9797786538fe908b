"""Decides, for every event sent to a session, whether its user gets a push notification.

Only final replies (``mojo_message``, ``draft_message``) are pushed, and only when the session's
user has no open socket at that moment. Sending happens on a small pool, never on the turn's
thread; a failed send is logged (a notification is a hint, the reply is stored either way).
"""

from __future__ import annotations

import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable

from sqlalchemy import select
from sqlalchemy.orm import Session as DbSession
from sqlalchemy.orm import sessionmaker

from mojodex_core.db.models import Session
from mojodex_core.push.notifiers import Notification, Notifier
from mojodex_core.push.presence import Presence

log = logging.getLogger("mojodex.push")

Transport = Callable[[str, str, dict[str, Any]], None]
FINAL_REPLY_EVENTS = ("mojo_message", "draft_message")
TITLE = "Mojo"
BODY_CHARS = 180


def notification_body(event_name: str, payload: dict[str, Any]) -> str:
    if event_name == "draft_message":
        text = payload.get("produced_text_title") or payload.get("title") or "Your result is ready"
    else:
        text = payload.get("text") or ""
    text = " ".join(str(text).split())
    return text if len(text) <= BODY_CHARS else text[: BODY_CHARS - 1].rstrip() + "…"


class PushOnFinalReplies:
    def __init__(self, factory: sessionmaker[DbSession], presence: Presence, notifier: Notifier | None) -> None:
        self._factory = factory
        self.presence = presence
        self.notifier = notifier
        self._users: dict[str, str] = {}  # session_id -> user_id (a session's user never changes)
        self._lock = threading.Lock()
        self._pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="push")
        self.sent = 0
        self.failed = 0

    def wrap(self, transport: Transport) -> Transport:
        """``transport``, then the push decision for final replies. The wrapped transport stays
        reachable as ``__wrapped__`` (a worker's event log sends token events through it directly)."""
        def send(session_id: str, event_name: str, payload: dict[str, Any]) -> None:
            transport(session_id, event_name, payload)
            if event_name in FINAL_REPLY_EVENTS:
                self.on_final_reply(session_id, event_name, payload)

        send.__wrapped__ = transport  # type: ignore[attr-defined]
        return send

    def _user_of(self, session_id: str) -> str | None:
        user_id = self._users.get(session_id)
        if user_id is None:
            with self._factory() as db:
                user_id = db.scalar(select(Session.user_id).where(Session.session_id == session_id))
            if user_id is not None:
                with self._lock:
                    if len(self._users) > 10_000:
                        self._users.clear()
                    self._users[session_id] = user_id
        return user_id

    def on_final_reply(self, session_id: str, event_name: str, payload: dict[str, Any]) -> bool:
        """True when a notification was submitted."""
        if self.notifier is None:
            return False
        try:
            user_id = self._user_of(session_id)
        except Exception:  # never fail the turn's publication for a notification
            log.exception("push: could not find the user of session %s", session_id)
            return False
        if user_id is None or self.presence.online(user_id):
            return False
        notification = Notification(
            user_id=user_id, session_id=session_id, event_name=event_name, message_pk=payload.get("message_pk"),
            user_task_execution_pk=payload.get("user_task_execution_pk"), title=TITLE,
            body=notification_body(event_name, payload),
        )
        try:
            self._pool.submit(self._send, notification)
        except RuntimeError:  # the process is stopping (its pool shut down): sent anyway rather than lost,
            # off this thread, which holds the session's event stream
            threading.Thread(target=self._send, args=(notification,), name="push-at-exit", daemon=True).start()
        return True

    def _send(self, notification: Notification) -> None:
        try:
            self.notifier.send(notification)
            self.sent += 1
            log.info("push sent to user %s via %s (message %s)", notification.user_id, self.notifier.name,
                     notification.message_pk)
        except Exception as exc:
            self.failed += 1
            log.warning("push to user %s failed: %s", notification.user_id, exc)

    def shutdown(self) -> None:
        self._pool.shutdown(wait=False)
        self.presence.close()
