"""user password hash (email + password sign-in for the web app)

Revision ID: 0006_web
Revises: 0005_wf
Create Date: 2026-11-24 06:45:00
"""
from typing import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0006_web'
down_revision: str | None = '0005_wf'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table('md_user', schema=None) as batch_op:
        batch_op.add_column(sa.Column('password_hash', sa.String(length=255), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('md_user', schema=None) as batch_op:
        batch_op.drop_column('password_hash')
