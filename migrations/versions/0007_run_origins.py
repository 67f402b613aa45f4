"""The node and node generation that reported each subscriber run, so runs that can report
no more are pruned (blackwidow.monitor.pruning). Runs recorded before stay: their origin is
unknown.

Revision ID: 0007
Revises: 0006
"""

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("subscriber_runs") as batch:
        batch.add_column(sa.Column("node_id", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("generation", sa.Integer(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("subscriber_runs") as batch:
        batch.drop_column("generation")
        batch.drop_column("node_id")
