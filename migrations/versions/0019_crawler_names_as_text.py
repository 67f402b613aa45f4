"""Stored crawler names are brought under the name rule (blackwidow.name_rule): a name held
control characters or what XML cannot carry, which made a user's whole OPML export
unreadable, or surrounding white space, which an import trims, so importing one's own export
made those crawlers again. Each run of such characters becomes one space, the name is
trimmed (`Unnamed` if nothing is left), and a name another crawler of the user holds then
takes `name (2)`, `name (3)`, ..., as 0018 named duplicates. The rule is written out here, as
a migration stays as it was written. Undoing keeps the new names: the old ones were unfit.

Revision ID: 0019
Revises: 0018
"""

import re
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision = "0019"
down_revision = "0018"
branch_labels = None
depends_on = None

NAME_LENGTH = 200
NOT_TEXT = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff\ufffe\uffff]+")
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


def downgrade() -> None:
    pass


def fit(name: str) -> str:
    """The name under the rule: runs of unfit characters one space, trimmed, at most
    NAME_LENGTH; `Unnamed` when nothing is left."""
    return NOT_TEXT.sub(" ", name).strip()[:NAME_LENGTH].rstrip() or "Unnamed"


def renamed(rows: Sequence[tuple[int, int, str]]) -> list[tuple[int, str]]:
    """(id, new name) of each crawler whose name breaks the rule; `rows` are (id, user_id,
    name) in id order. A fitted name another crawler of the user holds (one that fitted
    already, or an earlier one fitted) is told apart with a number. Pure."""
    held: dict[int, set[str]] = {}
    for _, user_id, name in rows:
        if fit(name) == name:
            held.setdefault(user_id, set()).add(name)
    changes = []
    for crawler_id, user_id, name in rows:
        fitted = fit(name)
        if fitted == name:
            continue
        taken = held.setdefault(user_id, set())
        fresh, n = fitted, 1
        while fresh in taken:
            n += 1
            suffix = f" ({n})"
            fresh = f"{fitted[: NAME_LENGTH - len(suffix)]}{suffix}"
        taken.add(fresh)
        changes.append((crawler_id, fresh))
    return changes
