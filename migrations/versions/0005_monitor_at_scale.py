"""The monitor at scale: crawler changes for cycles that cost what changed, lock epochs for
fencing a leader that lost its lock, crawler priorities, and indexes the API's writes need.

Revision ID: 0005
Revises: 0004
"""

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "crawler_changes",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("crawler_id", sa.Integer(), nullable=False),
        sa.Column("source_key", sa.String(length=36), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("monitor_lock") as batch:
        batch.add_column(sa.Column("epoch", sa.Integer(), nullable=False, server_default="0"))
    with op.batch_alter_table("crawlers") as batch:
        batch.add_column(
            sa.Column("priority", sa.String(length=10), nullable=False, server_default="normal")
        )
    op.create_index("ix_crawlers_state", "crawlers", ["state"])


def downgrade() -> None:
    op.drop_index("ix_crawlers_state", table_name="crawlers")
    with op.batch_alter_table("crawlers") as batch:
        batch.drop_column("priority")
    with op.batch_alter_table("monitor_lock") as batch:
        batch.drop_column("epoch")
    op.drop_table("crawler_changes")
