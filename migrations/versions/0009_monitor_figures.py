"""Each monitor shard's figures (cycle times, pushes, polls, phi per node), written by its
leader every cycle, so every hub process serves the same figures on `/metrics` and a new
leader counts on from its predecessor's.

Revision ID: 0009
Revises: 0008
"""

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("monitor_lock") as batch:
        batch.add_column(sa.Column("figures", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("monitor_lock") as batch:
        batch.drop_column("figures")
