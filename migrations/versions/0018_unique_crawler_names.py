"""A user's crawler names become unique (the index uq_crawlers_user_name), so a name always
names one crawler (`blackwidow items NAME`). Existing duplicates are renamed first, the same
way on every database: of a user's crawlers sharing a name, the lowest id keeps it, and the
others, in id order, take `name (2)`, `name (3)`, ..., skipping a name the user already
holds, cut to the column's 200 characters (as blackwidow.crawler_names.free_name names an
import's groups; written out here, as a migration stays as it was written). Undoing drops
the index and keeps the new names.

Revision ID: 0018
Revises: 0017
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None

NAME_LENGTH = 200
_CRAWLERS = sa.table(
    "crawlers", sa.column("id", sa.Integer), sa.column("user_id", sa.Integer), sa.column("name")
)


def upgrade() -> None:
    bind = op.get_bind()
    rows = bind.execute(
        sa.select(_CRAWLERS.c.id, _CRAWLERS.c.user_id, _CRAWLERS.c.name).order_by(_CRAWLERS.c.id)
    ).all()
    for crawler_id, name in renamed(rows):
        bind.execute(sa.update(_CRAWLERS).where(_CRAWLERS.c.id == crawler_id).values(name=name))
    op.create_index("uq_crawlers_user_name", "crawlers", ["user_id", "name"], unique=True)


def downgrade() -> None:
    op.drop_index("uq_crawlers_user_name", table_name="crawlers")


def renamed(rows: Sequence[tuple[int, int, str]]) -> list[tuple[int, str]]:
    """(id, new name) of each crawler whose name an older crawler of its user holds; `rows`
    are (id, user_id, name) in id order. Pure."""
    held: dict[int, set[str]] = {}
    for _, user_id, name in rows:
        held.setdefault(user_id, set()).add(name)
    kept: set[tuple[int, str]] = set()
    changes = []
    for crawler_id, user_id, name in rows:
        if (user_id, name) not in kept:
            kept.add((user_id, name))
            continue
        fresh, n = name, 1
        while fresh in held[user_id]:
            n += 1
            suffix = f" ({n})"
            fresh = f"{name[: NAME_LENGTH - len(suffix)]}{suffix}"
        held[user_id].add(fresh)
        changes.append((crawler_id, fresh))
    return changes
