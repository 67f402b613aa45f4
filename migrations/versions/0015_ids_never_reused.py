"""Crawlers and webhooks get AUTOINCREMENT on SQLite, so a deleted newest row's id is never
given to a new one (PostgreSQL's sequences never reuse: nothing to do there).

SQLite cannot add AUTOINCREMENT to a table, so each is rebuilt: copied into a new table and
renamed, keeping its rows, indexes and foreign keys. Other tables reference both with ON
DELETE CASCADE, so the copy must run with foreign keys off (Alembic's connection has them
off; the hub's own engine turns them on) or dropping the old table would delete the children.
The crawlers' sequence starts past every id the hub may still hear of: the highest crawler's,
and a deleted crawler's change the monitor has not read yet.

Reflection does not see AUTOINCREMENT: a later migration that rebuilds either table must pass
`table_kwargs={"sqlite_autoincrement": True}` again.

Revision ID: 0015
Revises: 0014
"""

from alembic import op
from sqlalchemy import text

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None

# each rebuilt table, and the SQL for the lowest its sequence may start at
TABLES = {
    "crawlers": "SELECT max(coalesce((SELECT max(id) FROM crawlers), 0),"
    " coalesce((SELECT max(crawler_id) FROM crawler_changes), 0))",
    "webhooks": "SELECT coalesce(max(id), 0) FROM webhooks",
}


def upgrade() -> None:
    if _rebuilds():
        for table, highest in TABLES.items():
            _rebuild(table, autoincrement=True)
            _start_sequence_past(table, highest)


def downgrade() -> None:
    if _rebuilds():
        for table in TABLES:
            _rebuild(table, autoincrement=False)


def _rebuilds() -> bool:
    """True on SQLite, where the tables are rebuilt; refuses to run with foreign keys on."""
    bind = op.get_bind()
    if bind.dialect.name != "sqlite":
        return False
    if bind.exec_driver_sql("PRAGMA foreign_keys").scalar():
        raise RuntimeError("rebuilding crawlers with foreign keys on would delete their children")
    return True


def _rebuild(table: str, autoincrement: bool) -> None:
    kwargs = {"sqlite_autoincrement": True} if autoincrement else {}
    with op.batch_alter_table(table, recreate="always", table_kwargs=kwargs):
        pass


def _start_sequence_past(table: str, highest: str) -> None:
    bind = op.get_bind()
    seq = bind.execute(text(highest)).scalar()
    bind.execute(text("DELETE FROM sqlite_sequence WHERE name = :table"), {"table": table})
    bind.execute(
        text("INSERT INTO sqlite_sequence (name, seq) VALUES (:table, :seq)"),
        {"table": table, "seq": seq},
    )
