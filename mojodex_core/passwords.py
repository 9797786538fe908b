"""Email + password sign-in: argon2id hashes (argon2-cffi).

Failed attempts are limited by the backend's rate limits (backend/rate_limits.py). A hash holds
the CPU for tens of milliseconds: under the gevent server it runs beside the event loop
(mojodex_core/concurrency.py), so that the process's streams go on meanwhile.
"""

from __future__ import annotations

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError, VerifyMismatchError
from sqlalchemy import select
from sqlalchemy.orm import Session as DbSession

from mojodex_core.concurrency import run_blocking
from mojodex_core.db.models import User
from mojodex_core.users import UserError

MIN_PASSWORD_CHARS = 8
_hasher = PasswordHasher()
# A hash to verify against when the email is unknown: the answer takes as long either way.
_DUMMY_HASH = _hasher.hash("not a password of anyone")


def hash_password(password: str) -> str:
    if len(password) < MIN_PASSWORD_CHARS:
        raise UserError(f"password: must be at least {MIN_PASSWORD_CHARS} characters")
    return run_blocking(_hasher.hash, password)


def set_password(user: User, password: str) -> None:
    user.password_hash = hash_password(password)


def check_password(db: DbSession, email: str, password: str) -> User | None:
    """The user with this email and password, or None (unknown email, no password, wrong one)."""
    user = db.scalar(select(User).where(User.email == email.strip().lower()))
    stored = user.password_hash if user is not None and user.password_hash else None
    try:
        run_blocking(_hasher.verify, stored or _DUMMY_HASH, password)
    except (VerifyMismatchError, VerificationError, InvalidHashError):
        return None
    if stored is None:
        return None
    if _hasher.check_needs_rehash(stored):
        user.password_hash = run_blocking(_hasher.hash, password)
    return user
