"""Users' billed totals per source type, the node and generation that reported each
data-source run, and when each run's count last grew, so runs that can report no more are
pruned (blackwidow.monitor.pruning), subscriber runs as data-source runs, once a restarted
node can no longer replay them. The totals start from the runs recorded so far.

Revision ID: 0008
Revises: 0007
"""

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("source_runs") as batch:
        batch.add_column(sa.Column("node_id", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("generation", sa.Integer(), nullable=True))
    for table in ("source_runs", "subscriber_runs"):
        with op.batch_alter_table(table) as batch:
            batch.add_column(sa.Column("heard_at", sa.DateTime(), nullable=True))
    op.create_table(
        "billed_totals",
        sa.Column(
            "user_id", sa.Integer(), sa.ForeignKey("users.id", ondelete="CASCADE"), nullable=False
        ),
        sa.Column("source", sa.String(length=40), nullable=False),
        sa.Column("delivered", sa.Integer(), server_default="0", nullable=False),
        sa.PrimaryKeyConstraint("user_id", "source"),
    )
    op.execute(
        "INSERT INTO billed_totals (user_id, source, delivered) "
        "SELECT user_id, source, SUM(delivered) FROM source_runs GROUP BY user_id, source"
    )


def downgrade() -> None:
    op.drop_table("billed_totals")
    for table in ("subscriber_runs", "source_runs"):
        with op.batch_alter_table(table) as batch:
            batch.drop_column("heard_at")
    with op.batch_alter_table("source_runs") as batch:
        batch.drop_column("generation")
        batch.drop_column("node_id")
