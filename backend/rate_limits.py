"""Rate limits: failed authentications, failed sign-ins, admin routes, message sends (docs/security.md).

Flask-Limiter holds the counters: in Redis when REDIS_URL is set (shared by every server
process), in memory otherwise. The checks are made where the caller is known (after the
token lookup, in the Socket.IO connect handler), so they go through the limiter's
strategy (`Limiter.limiter`) rather than through route decorators, and every refusal is
the same 429 {"error": ..., "retry_after": s} with a Retry-After header.
"""

from __future__ import annotations

import logging
import math
import threading
import time
import weakref
from typing import Callable

from flask import Flask, current_app, request
from flask_limiter import Limiter
from limits import RateLimitItem, parse_many
from limits.storage import MemoryStorage

from backend.errors import ApiError
from mojodex_core.config import Settings

log = logging.getLogger("mojodex.ratelimit")

EXTENSION = "mojodex_rate_limits"
TOKEN_PREFIX_CHARS = 8
STORAGE_ERROR_LOG_EVERY_S = 60.0
BREACH_LOG_EVERY_S = 60.0
LOGIN_REFUSED = "too many failed sign-ins: try again in {wait} s"
MEMORY_SWEEP_EVERY_S = 1.0


class SweptMemoryStorage(MemoryStorage):
    """limits' in-memory storage, with its expired entries swept by one thread every second.

    The stock storage sweeps on a `threading.Timer` of 10 ms that each hit restarts when it has
    run: under load, a new thread every 10 ms (1-2 % of the serving process's CPU in the turn
    bench) for a sweep that only frees memory; reads already ignore what has expired. Built
    from `memory://` URIs by `_storage_uri` below (scheme `mojodex-memory`).
    """

    STORAGE_SCHEME = ["mojodex-memory"]

    def __init__(self, uri: str | None = None, wrap_exceptions: bool = False, **options: str) -> None:
        super().__init__(uri, wrap_exceptions=wrap_exceptions, **options)
        self.timer.cancel()  # the stock 10 ms timer; _MemoryStorage__schedule_expiry no longer restarts it
        sweeper = threading.Thread(target=_sweep, args=(weakref.ref(self),), name="rate-limit-sweep", daemon=True)
        sweeper.start()

    def _MemoryStorage__schedule_expiry(self) -> None:  # noqa: N802 - overrides the name-mangled hook
        pass

    def sweep(self) -> None:
        self._MemoryStorage__expire_events()


def _sweep(storage_ref: weakref.ref[SweptMemoryStorage]) -> None:
    # A weak reference: the thread ends once its app and storage are gone (tests build many apps).
    while True:
        time.sleep(MEMORY_SWEEP_EVERY_S)
        storage = storage_ref()
        if storage is None:
            return
        try:
            storage.sweep()
        except Exception:  # noqa: BLE001 - a failed sweep only delays freeing memory
            log.exception("rate limit memory sweep failed")
        del storage


def client_address() -> str:
    return request.remote_addr or "unknown"


class RateLimits:
    def __init__(self, app: Flask, settings: Settings) -> None:
        config = settings.rate_limits
        self.enabled = config.enabled
        self.storage_uri = settings.redis_url or "memory://"
        self.limiter = Limiter(
            key_func=client_address,
            app=app,
            storage_uri=_storage_uri(self.storage_uri),
            # Redis: fail fast rather than hold a request while the storage is down.
            storage_options={"socket_timeout": 2, "socket_connect_timeout": 2} if settings.redis_url else {},
            strategy="moving-window",
            enabled=config.enabled,
        )
        _drop_request_hooks(app, self.limiter)
        self.rules: dict[str, list[RateLimitItem]] = {
            "auth_failures_per_address": parse_many(config.auth_failures_per_address),
            "auth_failures_per_token_prefix": parse_many(config.auth_failures_per_token_prefix),
            "admin": parse_many(config.admin),
            "message_sends": parse_many(config.message_sends),
            "login_failures_per_email": parse_many(config.login_failures_per_email),
            "login_failures_per_address": parse_many(config.login_failures_per_address),
        }
        self._storage_error_logged_at = 0.0
        self._breaches_logged: dict[tuple[str, str], float] = {}
        self._lock = threading.Lock()

    # --- the checks
    def before_authentication(self, address: str, token: str) -> None:
        """Refuses a caller (by address, or by token prefix) that failed to authenticate too often."""
        self._check("auth_failures_per_address", "too many failed authentications from this address", address)
        if token:
            self._check("auth_failures_per_token_prefix", "too many failed authentications with this token",
                        token[:TOKEN_PREFIX_CHARS])

    def authentication_failed(self, address: str, token: str) -> None:
        self._hit("auth_failures_per_address", None, address)
        if token:
            self._hit("auth_failures_per_token_prefix", None, token[:TOKEN_PREFIX_CHARS])

    def before_login(self, email: str, address: str) -> None:
        """Refuses a sign-in for an email, or from an address, that failed too often (even a right password)."""
        self._check("login_failures_per_email", LOGIN_REFUSED, email)
        self._check("login_failures_per_address", LOGIN_REFUSED, address)

    def login_failed(self, email: str, address: str) -> None:
        """Only failures are counted: a correct password is never slowed down."""
        self._hit("login_failures_per_email", None, email)
        self._hit("login_failures_per_address", None, address)

    def admin_request(self, address: str) -> None:
        self._hit("admin", "too many admin requests", address)

    def message_sent(self, user_id: str) -> None:
        self._hit("message_sends", "too many messages; wait before sending more", user_id)

    # --- the limiter
    def _check(self, rule: str, message: str, key: str) -> None:
        if not self.enabled:
            return
        for item in self.rules[rule]:
            if not self._guarded(lambda item=item: self.limiter.limiter.test(item, rule, key), True):
                self._refuse(rule, message, item, key)

    def _hit(self, rule: str, message: str | None, key: str) -> None:
        if not self.enabled:
            return
        for item in self.rules[rule]:
            allowed = self._guarded(lambda item=item: self.limiter.limiter.hit(item, rule, key), True)
            if not allowed and message is not None:
                self._refuse(rule, message, item, key)

    def _refuse(self, rule: str, message: str, item: RateLimitItem, key: str) -> None:
        stats = self._guarded(lambda: self.limiter.limiter.get_window_stats(item, rule, key), None)
        wait = max(1, math.ceil(stats.reset_time - time.time())) if stats else item.get_expiry()
        if self._first_breach(rule, key):
            log.warning("rate limit %s (%s) reached for %s; refused for %d s (said once a minute)",
                        rule, item, _shown(rule, key), wait)
        raise ApiError(429, message.format(wait=wait), headers={"Retry-After": str(wait)}, retry_after=wait)

    def _first_breach(self, rule: str, key: str) -> bool:
        """One log line per throttled caller a minute: a guessing client must not flood the log."""
        now = time.monotonic()
        with self._lock:
            if len(self._breaches_logged) > 10_000:
                self._breaches_logged.clear()
            last = self._breaches_logged.get((rule, key))
            if last is not None and now - last < BREACH_LOG_EVERY_S:
                return False
            self._breaches_logged[(rule, key)] = now
            return True

    def _guarded(self, call: Callable, fallback):  # noqa: ANN001, ANN202
        """The storage being down (Redis) must not take the API down: the limit is skipped, said once a minute."""
        try:
            return call()
        except Exception as exc:  # noqa: BLE001 - any storage failure
            with self._lock:
                now = time.monotonic()
                if now - self._storage_error_logged_at > STORAGE_ERROR_LOG_EVERY_S:
                    self._storage_error_logged_at = now
                    log.error("rate limit storage %s unreachable (%s: %s); limits are not enforced meanwhile",
                              self.storage_uri.split("@")[-1], type(exc).__name__, str(exc)[:200])
            return fallback


def _drop_request_hooks(app: Flask, limiter: Limiter) -> None:
    """Flask-Limiter hooks every request (before: resolve and check route/default limits; after:
    rate-limit headers; teardown: reset its context). No route carries a Flask-Limiter limit and
    none is configured by default (every limit here goes through the strategy, above), so those
    hooks only cost time on each request: unregister them, keeping the storage and strategy."""
    hooks = (
        (app.before_request_funcs, lambda f: f == limiter._check_request_limit),
        (app.after_request_funcs, lambda f: getattr(f, "func", None) is Limiter._Limiter__inject_headers),
        (app.teardown_request_funcs, lambda f: f == limiter._Limiter__release_context),
    )
    for registry, is_limiters in hooks:
        funcs = registry.get(None)
        if funcs:
            funcs[:] = [f for f in funcs if not is_limiters(f)]


def _storage_uri(uri: str) -> str:
    return "mojodex-memory://" if uri.startswith("memory://") else uri


def _shown(rule: str, key: str) -> str:
    # A token prefix is a quarter of a secret: log its first characters only.
    return f"token {key[:3]}..." if rule == "auth_failures_per_token_prefix" else key


def install_rate_limits(app: Flask, settings: Settings) -> RateLimits:
    limits = RateLimits(app, settings)
    app.extensions[EXTENSION] = limits
    if limits.enabled:
        config = settings.rate_limits
        log.info("rate limits on (%s storage): failed auth %s per address, %s per token prefix; failed sign-ins "
                 "%s per email, %s per address; admin %s; messages %s per user",
                 "Redis" if settings.redis_url else "memory", config.auth_failures_per_address,
                 config.auth_failures_per_token_prefix, config.login_failures_per_email,
                 config.login_failures_per_address, config.admin, config.message_sends)
    else:
        log.warning("rate limits are off (MOJODEX_RATE_LIMITS_ENABLED=0)")
    return limits


def rate_limits(app: Flask | None = None) -> RateLimits:
    return (app or current_app).extensions[EXTENSION]
