"""workflow step executions, their results, and files sent with form inputs

Revision ID: 0005_wf
Revises: 0004
Create Date: 2026-11-24 06:40:00
"""
from typing import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = '0005_wf'
down_revision: str | None = '0004'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

JSON = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql')
LIVE = sa.text("status NOT IN ('lapsed', 'invalidated')")


def upgrade() -> None:
    op.create_table(
        'user_workflow_step_execution',
        sa.Column('user_workflow_step_execution_pk', sa.Integer(), nullable=False),
        sa.Column('user_task_execution_fk', sa.Integer(), nullable=False),
        sa.Column('step_name', sa.String(length=255), nullable=False),
        sa.Column('rank', sa.Integer(), nullable=False),
        sa.Column('slot', sa.String(length=32), nullable=False),
        sa.Column('parent_step_execution_fk', sa.Integer(), nullable=True),
        sa.Column('item_index', sa.Integer(), nullable=False),
        sa.Column('parameter', JSON, nullable=False),
        sa.Column('status', sa.String(length=16), nullable=False),
        sa.Column('validated', sa.Boolean(), nullable=True),
        sa.Column('error', sa.Text(), nullable=True),
        sa.Column('learned_instruction', sa.Text(), nullable=True),
        sa.Column('attempt', sa.Integer(), nullable=False),
        sa.Column('start_date', sa.DateTime(timezone=True), nullable=True),
        sa.Column('end_date', sa.DateTime(timezone=True), nullable=True),
        sa.Column('heartbeat_at', sa.DateTime(timezone=True), nullable=True),
        sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint(
            "status IN ('running', 'done', 'failed', 'lapsed', 'invalidated')",
            name=op.f('ck_user_workflow_step_execution_status_allowed'),
        ),
        sa.ForeignKeyConstraint(
            ['parent_step_execution_fk'], ['user_workflow_step_execution.user_workflow_step_execution_pk'],
            name='fk_user_workflow_step_execution_parent', ondelete='CASCADE',
        ),
        sa.ForeignKeyConstraint(
            ['user_task_execution_fk'], ['user_task_execution.user_task_execution_pk'],
            name=op.f('fk_user_workflow_step_execution_user_task_execution_fk_user_task_execution'),
            ondelete='CASCADE',
        ),
        sa.PrimaryKeyConstraint('user_workflow_step_execution_pk', name=op.f('pk_user_workflow_step_execution')),
    )
    op.create_index(
        op.f('ix_user_workflow_step_execution_user_task_execution_fk'), 'user_workflow_step_execution',
        ['user_task_execution_fk'], unique=False,
    )
    op.create_index(
        op.f('ix_user_workflow_step_execution_parent_step_execution_fk'), 'user_workflow_step_execution',
        ['parent_step_execution_fk'], unique=False,
    )
    op.create_index(
        'uq_user_workflow_step_execution_live_slot', 'user_workflow_step_execution',
        ['user_task_execution_fk', 'rank', 'slot'], unique=True, sqlite_where=LIVE, postgresql_where=LIVE,
    )
    op.create_table(
        'user_workflow_step_execution_result',
        sa.Column('user_workflow_step_execution_result_pk', sa.Integer(), nullable=False),
        sa.Column('user_workflow_step_execution_fk', sa.Integer(), nullable=False),
        sa.Column('result', JSON, nullable=False),
        sa.Column('author', sa.String(length=16), nullable=False),
        sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint(
            "author IN ('assistant', 'user')", name=op.f('ck_user_workflow_step_execution_result_author_allowed'),
        ),
        sa.ForeignKeyConstraint(
            ['user_workflow_step_execution_fk'], ['user_workflow_step_execution.user_workflow_step_execution_pk'],
            name='fk_user_workflow_step_execution_result_step_execution', ondelete='CASCADE',
        ),
        sa.PrimaryKeyConstraint(
            'user_workflow_step_execution_result_pk', name=op.f('pk_user_workflow_step_execution_result')
        ),
    )
    op.create_index(
        op.f('ix_user_workflow_step_execution_result_user_workflow_step_execution_fk'),
        'user_workflow_step_execution_result', ['user_workflow_step_execution_fk'], unique=False,
    )
    op.create_table(
        'user_task_execution_file',
        sa.Column('user_task_execution_file_pk', sa.Integer(), nullable=False),
        sa.Column('user_task_execution_fk', sa.Integer(), nullable=False),
        sa.Column('input_name', sa.String(length=255), nullable=False),
        sa.Column('filename', sa.String(length=255), nullable=False),
        sa.Column('content_type', sa.String(length=128), nullable=True),
        sa.Column('data', sa.LargeBinary(), nullable=False),
        sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ['user_task_execution_fk'], ['user_task_execution.user_task_execution_pk'],
            name=op.f('fk_user_task_execution_file_user_task_execution_fk_user_task_execution'),
            ondelete='CASCADE',
        ),
        sa.PrimaryKeyConstraint('user_task_execution_file_pk', name=op.f('pk_user_task_execution_file')),
        sa.UniqueConstraint(
            'user_task_execution_fk', 'input_name', name=op.f('uq_user_task_execution_file_user_task_execution_fk_input_name')
        ),
    )


def downgrade() -> None:
    op.drop_table('user_task_execution_file')
    op.drop_index(
        op.f('ix_user_workflow_step_execution_result_user_workflow_step_execution_fk'),
        table_name='user_workflow_step_execution_result',
    )
    op.drop_table('user_workflow_step_execution_result')
    op.drop_index('uq_user_workflow_step_execution_live_slot', table_name='user_workflow_step_execution')
    op.drop_index(
        op.f('ix_user_workflow_step_execution_parent_step_execution_fk'), table_name='user_workflow_step_execution'
    )
    op.drop_index(
        op.f('ix_user_workflow_step_execution_user_task_execution_fk'), table_name='user_workflow_step_execution'
    )
    op.drop_table('user_workflow_step_execution')
