"""Crawlers get a schedule: when their data source polls, or the window they run in.

Revision ID: 0012
Revises: 0011
"""

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("crawlers") as batch:
        batch.add_column(sa.Column("schedule", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("crawlers") as batch:
        batch.drop_column("schedule")
