"""llm_call.call_id: a unique id per recorded call, so spooled rows are inserted once

The llm_call recorder writes its rows after the turn's answer, in batches, from a spool file
that a crashed process leaves behind; the next start replays it. The id makes that replay
idempotent (INSERT ... ON CONFLICT (call_id) DO NOTHING on SQLite and Postgres). Nullable:
rows stored before this revision have none (NULLs do not collide in a unique index).

Revision ID: 0009_llm_call_id
Revises: 0008_know
Create Date: 2026-11-27 12:41:00.000000
"""
from typing import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0009_llm_call_id'
down_revision: str | None = '0008_know'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table('llm_call', schema=None) as batch_op:
        batch_op.add_column(sa.Column('call_id', sa.String(length=32), nullable=True))
        batch_op.create_index(batch_op.f('ix_llm_call_call_id'), ['call_id'], unique=True)


def downgrade() -> None:
    with op.batch_alter_table('llm_call', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_llm_call_call_id'))
        batch_op.drop_column('call_id')
