"""The hub database gets an identity: one row holding a random id, made when this migration
runs, so a fresh database is a new cluster. Nodes scope the files they keep by it and never
replay one cluster's into another (docs/node-protocol.md "Registration").

Revision ID: 0020
Revises: 0019
"""

import uuid
from datetime import UTC, datetime

import sqlalchemy as sa
from alembic import op

revision = "0020"
down_revision = "0019"
branch_labels = None
depends_on = None


def upgrade() -> None:
    identity = op.create_table(
        "cluster_identity",
        sa.Column("id", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("cluster_id", sa.String(length=36), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    made_at = datetime.now(UTC).replace(tzinfo=None)  # naive UTC, as UtcDateTime stores it
    op.bulk_insert(identity, [{"id": 1, "cluster_id": str(uuid.uuid4()), "created_at": made_at}])


def downgrade() -> None:
    op.drop_table("cluster_identity")
