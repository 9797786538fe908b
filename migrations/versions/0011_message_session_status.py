"""message (session_id, status): a session's waiting messages found without reading the others

The distributed runner's drain asks, several times a turn, for the session's oldest pending
message and whether one is processing (mojodex_core/execution/session_claims.py). With no index
holding the status, both read every message of the session: ~1.1 ms each at 6,000 messages on
Postgres, growing with the conversation. With it they read the waiting messages only.

Revision ID: 0011_message_session_status
Revises: 0010_message_session_pk
Create Date: 2026-11-27 22:00:00.000000
"""
from typing import Sequence

from alembic import op

revision: str = '0011_message_session_status'
down_revision: str | None = '0010_message_session_pk'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    if op.get_bind().dialect.name == 'postgresql':
        # Built without blocking the writes of the busiest table (outside the migration's transaction).
        with op.get_context().autocommit_block():
            op.create_index('ix_message_session_status', 'message', ['session_id', 'status'], unique=False,
                            postgresql_concurrently=True)
    else:
        op.create_index('ix_message_session_status', 'message', ['session_id', 'status'], unique=False)


def downgrade() -> None:
    op.drop_index('ix_message_session_status', table_name='message')
