"""Where push notifications go: a webhook (JSON POST, optionally HMAC-signed) or the log."""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import urllib.error
import urllib.request
from dataclasses import asdict, dataclass
from typing import Any, Protocol

from mojodex_core.config import ConfigError

log = logging.getLogger("mojodex.push")


@dataclass(frozen=True)
class Notification:
    user_id: str
    session_id: str
    event_name: str  # the final reply's event: mojo_message or draft_message
    message_pk: int | None
    user_task_execution_pk: int | None
    title: str
    body: str

    def payload(self) -> dict[str, Any]:
        return asdict(self)


class NotifierError(Exception):
    pass


class Notifier(Protocol):
    name: str

    def send(self, notification: Notification) -> None: ...


class LogNotifier:
    """Writes each notification as a log line (the default: no push service configured)."""

    name = "log"

    def send(self, notification: Notification) -> None:
        log.info("push to user %s (session %s): %s: %s", notification.user_id, notification.session_id,
                 notification.title, notification.body)


class WebhookNotifier:
    """POSTs the notification as JSON; ``X-Mojodex-Signature: sha256=<hmac>`` when a secret is set."""

    name = "webhook"

    def __init__(self, url: str, *, secret: str | None = None, timeout_s: float = 5.0, attempts: int = 2) -> None:
        self.url = url
        self._secret = secret
        self._attempts = max(1, attempts)
        self._timeout_s = timeout_s

    def _post(self, body: bytes, headers: dict[str, str]) -> int:
        request = urllib.request.Request(self.url, data=body, headers=headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=self._timeout_s) as response:  # noqa: S310 (configured URL)
                return response.status
        except urllib.error.HTTPError as exc:
            return exc.code

    def send(self, notification: Notification) -> None:
        body = json.dumps(notification.payload(), separators=(",", ":")).encode()
        headers = {"Content-Type": "application/json"}
        if self._secret:
            digest = hmac.new(self._secret.encode(), body, hashlib.sha256).hexdigest()
            headers["X-Mojodex-Signature"] = f"sha256={digest}"
        error = "no attempt"
        for _ in range(self._attempts):
            try:
                status = self._post(body, headers)
            except (urllib.error.URLError, OSError) as exc:
                error = type(exc).__name__
                continue
            if status < 300:
                return
            error = f"HTTP {status}"
            if status < 500 and status != 429:
                break  # the receiver refuses it: trying again will not help
        raise NotifierError(f"push webhook {self.url} failed: {error}")


def build_notifier(config: dict[str, Any]) -> Notifier | None:
    """``{"notifier": "log" | "webhook" | "none", "webhook_url": ..., "webhook_secret": ...}``."""
    kind = (config.get("notifier") or "log").lower()
    if kind == "none":
        return None
    if kind == "webhook":
        if not config.get("webhook_url"):
            raise ValueError("push notifier 'webhook' needs webhook_url (MOJODEX_PUSH_WEBHOOK_URL)")
        return WebhookNotifier(config["webhook_url"], secret=config.get("webhook_secret"),
                               timeout_s=float(config.get("timeout_s", 5.0)))
    if kind == "log":
        return LogNotifier()
    raise ValueError(f"unknown push notifier {kind!r} (log, webhook or none)")


def push_config(extra: dict[str, Any], env: dict[str, str] | Any) -> dict[str, Any]:
    """MOJODEX_PUSH_NOTIFIER / _WEBHOOK_URL / _WEBHOOK_SECRET, overridden by ``settings.extra["push"]``."""
    config = {
        "notifier": env.get("MOJODEX_PUSH_NOTIFIER") or "log",
        "webhook_url": env.get("MOJODEX_PUSH_WEBHOOK_URL") or None,
        "webhook_secret": env.get("MOJODEX_PUSH_WEBHOOK_SECRET") or None,
    }
    config.update(extra.get("push") or {})
    if (config["notifier"] or "").lower() not in ("log", "webhook", "none"):
        raise ConfigError(f"MOJODEX_PUSH_NOTIFIER: must be one of log, webhook, none, got {config['notifier']!r}")
    if config["notifier"].lower() == "webhook" and not config.get("webhook_url"):
        raise ConfigError("MOJODEX_PUSH_WEBHOOK_URL: required when MOJODEX_PUSH_NOTIFIER is webhook")
    return config
