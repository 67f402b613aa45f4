"""Nodes keep the CPU and memory in use their latest poll answer reported (null: not yet).

Revision ID: 0014
Revises: 0013
"""

import sqlalchemy as sa
from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("nodes") as batch:
        batch.add_column(sa.Column("cpu_percent", sa.Double(), nullable=True))
        batch.add_column(sa.Column("memory_bytes", sa.BigInteger(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("nodes") as batch:
        batch.drop_column("memory_bytes")
        batch.drop_column("cpu_percent")
