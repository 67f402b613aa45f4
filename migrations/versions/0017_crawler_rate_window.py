"""Crawlers get rate_samples: a few (count, at) samples at the hub's clock that the rate shown
is read from, over BLACKWIDOW_RATE_WINDOW (null: none yet; the first poll adds one).

Revision ID: 0017
Revises: 0016
"""

import sqlalchemy as sa
from alembic import op

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("crawlers") as batch:
        batch.add_column(sa.Column("rate_samples", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("crawlers") as batch:
        batch.drop_column("rate_samples")
