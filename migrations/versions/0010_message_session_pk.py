"""message (session_id, message_pk): a session's conversation read newest first, page by page

A turn reads its conversation newest first and stops once the prompt's budget is full
(mojodex_core/execution/history.py). Without this index SQLite gathered every message of the
execution, and every message of the whole database without one, then sorted them, at each page.
With it, both databases walk the session's messages backwards and stop at the page's end.

Revision ID: 0010_message_session_pk
Revises: 0009_llm_call_id
Create Date: 2026-11-27 21:50:00.000000
"""
from typing import Sequence

from alembic import op

revision: str = '0010_message_session_pk'
down_revision: str | None = '0009_llm_call_id'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    if op.get_bind().dialect.name == 'postgresql':
        # message is the busiest table: build the index without blocking its writes (outside the
        # migration's transaction, as CREATE INDEX CONCURRENTLY must run).
        with op.get_context().autocommit_block():
            op.create_index('ix_message_session_pk', 'message', ['session_id', 'message_pk'], unique=False,
                            postgresql_concurrently=True)
    else:
        op.create_index('ix_message_session_pk', 'message', ['session_id', 'message_pk'], unique=False)


def downgrade() -> None:
    op.drop_index('ix_message_session_pk', table_name='message')
