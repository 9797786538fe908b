"""Users, their API tokens (stored as sha256 hashes, a sign-in's with an expiry) and which tasks they may run."""

from __future__ import annotations

import hashlib
import re
import secrets
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import DateTime, bindparam, or_, select
from sqlalchemy.engine import Connection
from sqlalchemy.orm import Session as DbSession

from mojodex_core.db.models import ApiToken, Task, User, UserTask, utcnow
from mojodex_core.languages import unknown_language
from mojodex_core.timestamps import as_utc

EMAIL_RE = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")


class UserError(Exception):
    """A user operation that cannot be done; the message says why."""


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def create_user(db: DbSession, *, name: str, email: str, language_code: str = "en") -> User:
    email = email.strip().lower()
    if not EMAIL_RE.match(email):
        raise UserError(f"email: not a valid address: {email!r}")
    if not name.strip():
        raise UserError("name: must not be empty")
    if not re.fullmatch(r"[a-z]{2}(-[A-Za-z]{2})?", language_code):
        raise UserError(f"language: must be a language code like 'en' or 'fr', got {language_code!r}")
    if problem := unknown_language(language_code):
        raise UserError(f"language: {problem}")
    if db.scalar(select(User).where(User.email == email)):
        raise UserError(f"email: a user with {email} already exists")
    user = User(user_id=uuid.uuid4().hex, name=name.strip(), email=email, language_code=language_code)
    db.add(user)
    db.flush()
    return user


def issue_token(db: DbSession, user: User, label: str = "default", expires_at: datetime | None = None) -> str:
    """Returns the token in clear: the only moment it exists outside the client. ``expires_at``:
    when the token stops authenticating (None: it lives until revoked)."""
    token = secrets.token_urlsafe(32)
    db.add(ApiToken(user_id=user.user_id, token_hash=hash_token(token), label=label, expires_at=expires_at))
    db.flush()
    return token


def _unexpired():  # noqa: ANN202
    """The condition of a token that has not expired, the clock read at each execution (the
    statements that use it are compiled once and cached)."""
    now = bindparam("b_token_now", callable_=utcnow, type_=DateTime(timezone=True))
    return or_(ApiToken.expires_at.is_(None), ApiToken.expires_at > now)


def token_expired(revoked_at: datetime | None, expires_at: datetime | None, now: datetime | None = None) -> bool:
    """Whether a stored token (its row's two columns) stopped authenticating by expiring: not
    revoked, and its expiry passed (``now``: the clock, unless given)."""
    return revoked_at is None and expires_at is not None and as_utc(expires_at) <= (now or utcnow())


@dataclass(frozen=True)
class TokenHolder:
    """Who a request's token belongs to: the user's columns, read without loading an ORM object."""

    user_id: str
    name: str
    email: str
    language_code: str
    timezone_offset_minutes: int


@dataclass(frozen=True)
class TokenRead:
    """What one read of a token found: its holder when it authenticates; else whether it expired
    (``token expired``) rather than never was, was revoked or its user is gone."""

    holder: TokenHolder | None = None
    expired: bool = False


# The token's row whatever its state, with the holder's columns first: whether it authenticates
# (not revoked, not expired) is decided in Python (``token_read``), so a refused token, garbage
# included, costs this one statement as an accepted one does.
TOKEN_HOLDER = (
    select(User.user_id, User.name, User.email, User.language_code, User.timezone_offset_minutes,
           ApiToken.revoked_at, ApiToken.expires_at)
    .join(ApiToken, ApiToken.user_id == User.user_id)
    .where(ApiToken.token_hash == bindparam("b_hash"))
)
_HOLDER_COLUMNS = 5  # TOKEN_HOLDER's columns before revoked_at, expires_at


def token_read(row: Sequence[Any] | None) -> TokenRead:
    """The verdict on a row of TOKEN_HOLDER (None: no such token)."""
    if row is None:
        return TokenRead()
    revoked_at, expires_at = row[_HOLDER_COLUMNS], row[_HOLDER_COLUMNS + 1]
    if revoked_at is not None:
        return TokenRead()
    if token_expired(revoked_at, expires_at):
        return TokenRead(expired=True)
    return TokenRead(TokenHolder(*row[:_HOLDER_COLUMNS]))


def read_token(conn: Connection | DbSession, token: str) -> TokenRead:
    """The per-request check, in one statement: the holder of a valid (not revoked, not expired)
    token, or why there is none."""
    if not token:
        return TokenRead()
    return token_read(conn.execute(TOKEN_HOLDER, {"b_hash": hash_token(token)}).first())


def user_for_token(db: DbSession, token: str) -> User | None:
    if not token:
        return None
    row = db.execute(
        select(User)
        .join(ApiToken, ApiToken.user_id == User.user_id)
        .where(ApiToken.token_hash == hash_token(token), ApiToken.revoked_at.is_(None), _unexpired())
    ).scalar_one_or_none()
    return row


def revoke_tokens(db: DbSession, *, token: str | None = None, email: str | None = None) -> list[ApiToken]:
    """Revokes one token (given in clear) or every live token of a user; returns the rows revoked
    now (a token revoked already, or expired, is not revoked: it no longer authenticates). REST
    refuses a revoked token at once; open sockets are closed by the server's next check
    (MOJODEX_SOCKET_AUTH_RECHECK_S)."""
    if (token is None) == (email is None):
        raise UserError("give either a token or a user's email")
    query = select(ApiToken).where(ApiToken.revoked_at.is_(None), _unexpired())
    if token is not None:
        if not token.strip() or db.scalar(select(ApiToken.api_token_pk).where(
                ApiToken.token_hash == hash_token(token.strip()))) is None:
            raise UserError("token: no such token")
        query = query.where(ApiToken.token_hash == hash_token(token.strip()))
    else:
        query = query.where(ApiToken.user_id == find_user(db, email).user_id)
    rows = list(db.scalars(query.with_for_update()))
    now = datetime.now(UTC)
    for row in rows:
        row.revoked_at = now
    db.flush()
    return rows


def ended_tokens(db: DbSession, token_hashes: Iterable[str], chunk: int = 500) -> dict[str, bool]:
    """Which of these token hashes no longer authenticate, each with whether it expired (True)
    rather than was revoked or is gone (False): one query per chunk of hashes."""
    wanted = sorted(set(token_hashes))
    ended = dict.fromkeys(wanted, False)  # revoked or gone, until its row says otherwise
    for start in range(0, len(wanted), chunk):
        for token_hash, revoked_at, expires_at in db.execute(
            select(ApiToken.token_hash, ApiToken.revoked_at, ApiToken.expires_at)
            .where(ApiToken.token_hash.in_(wanted[start:start + chunk]))
        ):
            if token_expired(revoked_at, expires_at):
                ended[token_hash] = True
            elif revoked_at is None:
                del ended[token_hash]  # it still authenticates
    return ended


def stored_token_expired(db: DbSession, token: str) -> bool:
    """Whether ``token`` (in clear) is a stored token that stopped authenticating by expiring."""
    row = db.execute(select(ApiToken.revoked_at, ApiToken.expires_at)
                     .where(ApiToken.token_hash == hash_token(token.strip()))).first()
    return row is not None and token_expired(*row)



def find_user(db: DbSession, email: str) -> User:
    user = db.scalar(select(User).where(User.email == email.strip().lower()))
    if user is None:
        raise UserError(f"user: no user with email {email!r}")
    return user


def grant(db: DbSession, user: User, task_names: list[str] | None) -> list[str]:
    """Enables tasks for a user (None: every task). Returns the names newly granted."""
    query = select(Task)
    if task_names is not None:
        query = query.where(Task.name_for_system.in_(task_names))
    tasks = list(db.scalars(query))
    if task_names is not None:
        missing = sorted(set(task_names) - {t.name_for_system for t in tasks})
        if missing:
            raise UserError(f"task: no task named {', '.join(missing)}")
    existing = {
        ut.task_fk: ut for ut in db.scalars(select(UserTask).where(UserTask.user_id == user.user_id))
    }
    granted = []
    for task in tasks:
        user_task = existing.get(task.task_pk)
        if user_task is None:
            db.add(UserTask(user_id=user.user_id, task_fk=task.task_pk, enabled=True))
            granted.append(task.name_for_system)
        elif not user_task.enabled:
            user_task.enabled = True
            granted.append(task.name_for_system)
    db.flush()
    return granted
