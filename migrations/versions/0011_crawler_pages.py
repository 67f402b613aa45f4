"""A user's crawlers indexed in id order, so each page of their list reads only its rows.

On PostgreSQL an index on user_id alone keeps a user's rows in no useful order: a page would
sort all of them, or walk the primary key past everyone else's. (user_id, id) also serves
every lookup the old index did.

Revision ID: 0011
Revises: 0010
"""

from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_crawlers_user_page", "crawlers", ["user_id", "id"])
    op.drop_index("ix_crawlers_user_id", table_name="crawlers")


def downgrade() -> None:
    op.create_index("ix_crawlers_user_id", "crawlers", ["user_id"])
    op.drop_index("ix_crawlers_user_page", table_name="crawlers")
