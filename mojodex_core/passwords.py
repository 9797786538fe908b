"""Email + password sign-in: argon2id hashes (argon2-cffi) and a limit on failed attempts.

The limiter counts failures only (a correct password is never slowed down), per email and per
client address, in a moving window (the `limits` library, the engine under Flask-Limiter).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError, VerifyMismatchError
from limits import RateLimitItem, parse
from limits.storage import storage_from_string
from limits.strategies import MovingWindowRateLimiter
from sqlalchemy import select
from sqlalchemy.orm import Session as DbSession

from mojodex_core.db.models import User
from mojodex_core.users import UserError

MIN_PASSWORD_CHARS = 8
_hasher = PasswordHasher()
# A hash to verify against when the email is unknown: the answer takes as long either way.
_DUMMY_HASH = _hasher.hash("not a password of anyone")


def hash_password(password: str) -> str:
    if len(password) < MIN_PASSWORD_CHARS:
        raise UserError(f"password: must be at least {MIN_PASSWORD_CHARS} characters")
    return _hasher.hash(password)


def set_password(user: User, password: str) -> None:
    user.password_hash = hash_password(password)


def check_password(db: DbSession, email: str, password: str) -> User | None:
    """The user with this email and password, or None (unknown email, no password, wrong one)."""
    user = db.scalar(select(User).where(User.email == email.strip().lower()))
    stored = user.password_hash if user is not None and user.password_hash else None
    try:
        _hasher.verify(stored or _DUMMY_HASH, password)
    except (VerifyMismatchError, VerificationError, InvalidHashError):
        return None
    if stored is None:
        return None
    if _hasher.check_needs_rehash(stored):
        user.password_hash = _hasher.hash(password)
    return user


@dataclass
class FailedLoginLimiter:
    """At most ``per_email`` failed sign-ins for one email and ``per_address`` from one client
    address (limits notation, e.g. "5/minute"); further attempts are refused until the window moves."""

    per_email: str = "5/minute"
    per_address: str = "30/minute"
    storage_uri: str = "memory://"

    def __post_init__(self) -> None:
        self._limiter = MovingWindowRateLimiter(storage_from_string(self.storage_uri))

    def _keys(self, email: str, address: str) -> list[tuple[RateLimitItem, str, str]]:
        return [(parse(self.per_email), "login_email", email.strip().lower()),
                (parse(self.per_address), "login_address", address or "?")]

    def blocked(self, email: str, address: str) -> bool:
        return any(not self._limiter.test(item, *key) for item, *key in self._keys(email, address))

    def failed(self, email: str, address: str) -> None:
        for item, *key in self._keys(email, address):
            self._limiter.hit(item, *key)

    def retry_after_s(self, email: str, address: str) -> int:
        """Seconds until the next attempt may be made."""
        resets = [self._limiter.get_window_stats(item, *key).reset_time for item, *key in self._keys(email, address)
                  if not self._limiter.test(item, *key)]
        return max(1, int(max(resets, default=time.time()) - time.time()) + 1)
