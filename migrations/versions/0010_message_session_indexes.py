"""message (session_id, message_pk) and (session_id, status): reads that stop growing with a session

* (session_id, message_pk): a turn reads its conversation newest first and stops once the
  prompt's budget is full (mojodex_core/execution/history.py). Without it SQLite gathered every
  message of the execution, and every message of the database without one, then sorted them,
  at each page.
* (session_id, status): the distributed drain asks several times a turn for the session's oldest
  pending message and whether one is processing (mojodex_core/execution/session_claims.py); with
  no index holding the status both read every message of the session (~1.1 ms each at 6,000
  messages on Postgres).

On Postgres they are built concurrently: message is the busiest table, and CREATE INDEX would
block its writes for the whole build (CONCURRENTLY runs outside the migration's transaction).

Revision ID: 0010_message_session_indexes
Revises: 0009_llm_call_id
Create Date: 2026-11-27 21:50:00.000000
"""
from typing import Sequence

from alembic import op

revision: str = '0010_message_session_indexes'
down_revision: str | None = '0009_llm_call_id'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

INDEXES = {'ix_message_session_pk': ['session_id', 'message_pk'], 'ix_message_session_status': ['session_id', 'status']}


def upgrade() -> None:
    if op.get_bind().dialect.name != 'postgresql':
        for name, columns in INDEXES.items():
            op.create_index(name, 'message', columns, unique=False)
        return
    with op.get_context().autocommit_block():
        for name, columns in INDEXES.items():
            op.create_index(name, 'message', columns, unique=False, postgresql_concurrently=True)


def downgrade() -> None:
    for name in INDEXES:
        op.drop_index(name, table_name='message')
