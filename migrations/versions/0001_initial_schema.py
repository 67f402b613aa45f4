"""Initial schema: users, crawlers, nodes, assignments and the monitor's leader lock.

Revision ID: 0001
Revises:
Create Date: 2026-11-21 16:54:25.835636
"""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "monitor_lock",
        sa.Column("name", sa.String(length=40), nullable=False),
        sa.Column("holder", sa.String(length=64), nullable=True),
        sa.Column("expires_at", sa.DateTime(), nullable=True),
        sa.Column("last_cycle_at", sa.DateTime(), nullable=True),
        sa.Column("last_cycle_seconds", sa.Double(), nullable=True),
        sa.PrimaryKeyConstraint("name"),
    )
    op.create_table(
        "nodes",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("url", sa.String(length=500), nullable=False),
        sa.Column("capacity", sa.Integer(), nullable=False),
        sa.Column("state", sa.String(length=20), nullable=False),
        sa.Column("registered_at", sa.DateTime(), nullable=False),
        sa.Column("last_polled_at", sa.DateTime(), nullable=True),
        sa.Column("subscribers", sa.Integer(), nullable=False),
        sa.Column("data_sources", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("url"),
    )
    op.create_table(
        "users",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("token_hash", sa.String(length=64), nullable=False),
        sa.Column("item_limit", sa.Integer(), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("name"),
        sa.UniqueConstraint("token_hash"),
    )
    op.create_table(
        "crawlers",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("uuid", sa.String(length=36), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("source", sa.String(length=40), nullable=False),
        sa.Column("query", sa.JSON(), nullable=False),
        sa.Column("item_limit", sa.Integer(), nullable=True),
        sa.Column("enabled", sa.Boolean(), nullable=False),
        sa.Column("state", sa.String(length=20), nullable=False),
        sa.Column("items_collected", sa.Integer(), nullable=False),
        sa.Column("rate", sa.Double(), nullable=False),
        sa.Column("lease", sa.Integer(), nullable=False),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("crawlers", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_crawlers_user_id"), ["user_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_crawlers_uuid"), ["uuid"], unique=False)

    op.create_table(
        "assignments",
        sa.Column("crawler_id", sa.Integer(), nullable=False),
        sa.Column("node_id", sa.Integer(), nullable=False),
        sa.Column("digest", sa.String(length=40), nullable=True),
        sa.Column("pushed_at", sa.DateTime(), nullable=True),
        sa.ForeignKeyConstraint(["crawler_id"], ["crawlers.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["node_id"], ["nodes.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("crawler_id"),
    )
    with op.batch_alter_table("assignments", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_assignments_node_id"), ["node_id"], unique=False)

    lock = sa.table("monitor_lock", sa.column("name", sa.String))
    op.bulk_insert(lock, [{"name": "monitor"}])


def downgrade() -> None:
    with op.batch_alter_table("assignments", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_assignments_node_id"))

    op.drop_table("assignments")
    with op.batch_alter_table("crawlers", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_crawlers_uuid"))
        batch_op.drop_index(batch_op.f("ix_crawlers_user_id"))

    op.drop_table("crawlers")
    op.drop_table("users")
    op.drop_table("nodes")
    op.drop_table("monitor_lock")
