"""Users store credentials of billed sources; crawlers count the items their providers delivered.

`subscriber_runs` keeps the highest delivered count each subscriber run reported, so a
crawler's `items_delivered` grows only by what is new, however often a run is heard;
`source_runs` does the same per data source and user, the figure a provider bills.

Revision ID: 0004
Revises: 0003
"""

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "credentials",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("source", sa.String(length=40), nullable=False),
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("secret", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("user_id", "source", "name", name="uq_credentials_user_source_name"),
    )
    op.create_index(op.f("ix_credentials_user_id"), "credentials", ["user_id"])
    op.create_table(
        "subscriber_runs",
        sa.Column("run", sa.String(length=32), nullable=False),
        sa.Column("crawler_id", sa.Integer(), nullable=False),
        sa.Column("delivered", sa.Integer(), nullable=False, server_default="0"),
        sa.ForeignKeyConstraint(["crawler_id"], ["crawlers.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("run"),
    )
    op.create_index(op.f("ix_subscriber_runs_crawler_id"), "subscriber_runs", ["crawler_id"])
    op.create_table(
        "source_runs",
        sa.Column("run", sa.String(length=32), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("source", sa.String(length=40), nullable=False),
        sa.Column("delivered", sa.Integer(), nullable=False, server_default="0"),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("run", "user_id"),
    )
    op.create_index(op.f("ix_source_runs_user_id"), "source_runs", ["user_id"])
    with op.batch_alter_table("crawlers") as batch:
        batch.add_column(
            sa.Column("items_delivered", sa.Integer(), nullable=False, server_default="0")
        )


def downgrade() -> None:
    with op.batch_alter_table("crawlers") as batch:
        batch.drop_column("items_delivered")
    op.drop_index(op.f("ix_source_runs_user_id"), table_name="source_runs")
    op.drop_table("source_runs")
    op.drop_index(op.f("ix_subscriber_runs_crawler_id"), table_name="subscriber_runs")
    op.drop_table("subscriber_runs")
    op.drop_index(op.f("ix_credentials_user_id"), table_name="credentials")
    op.drop_table("credentials")
