"""chaining link (parent execution) and title/summary job status

Revision ID: 0004
Revises: 0001
Create Date: 2026-11-23 18:39:27.624707
"""
from typing import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0004'
down_revision: str | None = '0003'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table('user_task_execution', schema=None) as batch_op:
        batch_op.add_column(sa.Column('title_status', sa.String(length=16), nullable=True))
        batch_op.add_column(sa.Column('parent_user_task_execution_fk', sa.Integer(), nullable=True))
        batch_op.create_index(
            batch_op.f('ix_user_task_execution_parent_user_task_execution_fk'),
            ['parent_user_task_execution_fk'], unique=False,
        )
        batch_op.create_foreign_key(
            'fk_user_task_execution_parent', 'user_task_execution',
            ['parent_user_task_execution_fk'], ['user_task_execution_pk'], ondelete='SET NULL',
        )
        batch_op.create_check_constraint(
            op.f('ck_user_task_execution_title_status_allowed'),
            "title_status IN ('pending', 'done', 'failed')",
        )


def downgrade() -> None:
    with op.batch_alter_table('user_task_execution', schema=None) as batch_op:
        batch_op.drop_constraint(op.f('ck_user_task_execution_title_status_allowed'), type_='check')
        batch_op.drop_constraint('fk_user_task_execution_parent', type_='foreignkey')
        batch_op.drop_index(batch_op.f('ix_user_task_execution_parent_user_task_execution_fk'))
        batch_op.drop_column('parent_user_task_execution_fk')
        batch_op.drop_column('title_status')
