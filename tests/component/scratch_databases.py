"""Throwaway PostgreSQL databases, and one migrated database that tests take in turn.

Copying a migrated template (CREATE DATABASE ... TEMPLATE) costs far less than migrating anew;
emptying a database's tables (TRUNCATE ... RESTART IDENTITY) costs far less again.
"""

from __future__ import annotations

import secrets

from sqlalchemy import Connection, create_engine, make_url, text
from sqlalchemy.pool import NullPool


class ScratchDatabases:
    """Creates and drops databases on one PostgreSQL server through its superuser URL."""

    def __init__(self, admin_url: str) -> None:
        self._server = make_url(admin_url)
        # CREATE and DROP DATABASE refuse to run inside a transaction
        self._admin = create_engine(self._server, isolation_level="AUTOCOMMIT")

    def create(self, template_url: str | None = None) -> str:
        """The URL of a new database: a copy of the one at `template_url`, else empty.

        The template must have no open connections while it is copied.
        """
        name = f"bw_{secrets.token_hex(8)}"
        copy = f" TEMPLATE {_quoted(_name(template_url))}" if template_url else ""
        with self._admin.connect() as connection:
            connection.execute(text(f"CREATE DATABASE {_quoted(name)}{copy}"))
        return self._server.set(database=name).render_as_string(hide_password=False)

    def drop(self, url: str) -> None:
        """Drop the database, ending any connection still open to it."""
        name = _name(url)
        assert name.startswith("bw_"), f"not a scratch database: {name!r}"
        with self._admin.connect() as connection:
            connection.execute(text(f"DROP DATABASE IF EXISTS {_quoted(name)} WITH (FORCE)"))

    def close(self) -> None:
        self._admin.dispose()


class ReusedDatabase:
    """A copy of a migrated template that each test empties before it uses it: no rows, every
    sequence back at its start and no connection left from the test before, as in a new copy.
    """

    def __init__(self, databases: ScratchDatabases, template_url: str) -> None:
        self._databases = databases
        self.url = databases.create(template_url)
        self._engine = create_engine(self.url, isolation_level="AUTOCOMMIT", poolclass=NullPool)
        with self._engine.connect() as connection:
            tables = connection.scalars(
                text(
                    "SELECT quote_ident(tablename) FROM pg_tables"
                    " WHERE schemaname = 'public' AND tablename <> 'alembic_version'"
                )
            )
            self._truncate = f"TRUNCATE {', '.join(tables)} RESTART IDENTITY CASCADE"

    def emptied(self) -> str:
        """The database's URL, once it is as its template was."""
        with self._engine.connect() as connection:
            _end_other_connections(connection)
            connection.execute(text(self._truncate))
        return self.url

    def let_go(self) -> None:
        """End the connections a test left open, as dropping its own copy would."""
        with self._engine.connect() as connection:
            _end_other_connections(connection)

    def close(self) -> None:
        self._engine.dispose()
        self._databases.drop(self.url)


def _end_other_connections(connection: Connection) -> None:
    connection.execute(
        text(
            "SELECT pg_terminate_backend(pid, 5000) FROM pg_stat_activity"
            " WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
    )


def _name(url: str) -> str:
    name = make_url(url).database
    if not name:
        raise ValueError("the URL names no database")
    return name


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'
