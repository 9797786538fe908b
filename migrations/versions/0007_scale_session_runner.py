"""session_runner: the per-session lease (owner, fencing token, heartbeat) of distributed workers

Revision ID: 0007_scale
Revises: 0006_web
"""
from typing import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0007_scale'
down_revision: str | None = '0006_web'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        'session_runner',
        sa.Column('session_id', sa.String(length=64), nullable=False),
        sa.Column('owner', sa.String(length=128), nullable=True),
        sa.Column('fence', sa.Integer(), nullable=False),
        sa.Column('heartbeat_at', sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(['session_id'], ['md_session.session_id'],
                                name=op.f('fk_session_runner_session_id_md_session'), ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('session_id', name=op.f('pk_session_runner')),
    )
    op.create_index(op.f('ix_session_runner_heartbeat_at'), 'session_runner', ['heartbeat_at'], unique=False)


def downgrade() -> None:
    op.drop_index(op.f('ix_session_runner_heartbeat_at'), table_name='session_runner')
    op.drop_table('session_runner')
