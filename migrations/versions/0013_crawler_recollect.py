"""Crawlers get recollect_after: the length of the time segments after which an item already
collected may be collected again, as a new version (null: never).

Revision ID: 0013
Revises: 0012
"""

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("crawlers") as batch:
        batch.add_column(sa.Column("recollect_after", sa.Integer(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("crawlers") as batch:
        batch.drop_column("recollect_after")
