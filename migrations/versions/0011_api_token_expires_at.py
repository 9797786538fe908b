"""api_token.expires_at: a sign-in's token stops authenticating after a lifetime

POST /login issued tokens that lived until revoked. A token now carries its expiry
(MOJODEX_LOGIN_TOKEN_LIFETIME_DAYS, 30 by default, from its sign-in); NULL is no expiry, as for
the tokens the CLI issues for API clients. The sign-in tokens stored before this revision get
the default lifetime from their creation: one older than 30 days no longer authenticates.
Downgrading revokes the expired tokens (at their expiry) before dropping the column, since the
code before this revision checks only revoked_at.

Revision ID: 0011_api_token_expires_at
Revises: 0010_message_session_indexes
Create Date: 2026-12-07 10:00:00.000000
"""
from datetime import UTC, datetime
from typing import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0011_api_token_expires_at'
down_revision: str | None = '0010_message_session_indexes'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# The default of MOJODEX_LOGIN_TOKEN_LIFETIME_DAYS when this revision was written.
LIFETIME_DAYS = 30


def upgrade() -> None:
    with op.batch_alter_table('api_token', schema=None) as batch_op:
        batch_op.add_column(sa.Column('expires_at', sa.DateTime(timezone=True), nullable=True))
    hours = LIFETIME_DAYS * 24  # exact hours, as POST /login's timedelta(days=...)
    if op.get_bind().dialect.name == 'postgresql':
        # Not '30 days': a calendar step in the session's time zone (29 days 23 hours across a
        # change to summer time).
        expiry = f"created_at + interval '{hours} hours'"
    else:  # SQLite keeps SQLAlchemy's text form, 'YYYY-MM-DD HH:MM:SS.ffffff': the seconds are
        # shifted, the microseconds (from character 20) kept as they were (%f has milliseconds only)
        expiry = f"strftime('%Y-%m-%d %H:%M:%S', created_at, '+{hours} hours') || substr(created_at, 20)"
    op.execute(f"UPDATE api_token SET expires_at = {expiry} WHERE label = 'login' AND expires_at IS NULL")


def downgrade() -> None:
    # The code before this revision checks only revoked_at: an expired token would authenticate
    # again once its expiry is gone. It is revoked at its expiry first.
    now = sa.bindparam('now', value=datetime.now(UTC), type_=sa.DateTime(timezone=True))
    op.execute(sa.text(
        "UPDATE api_token SET revoked_at = expires_at WHERE expires_at <= :now AND revoked_at IS NULL"
    ).bindparams(now))
    with op.batch_alter_table('api_token', schema=None) as batch_op:
        batch_op.drop_column('expires_at')
