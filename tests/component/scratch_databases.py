"""Throwaway PostgreSQL databases, so each test gets its own without sharing rows or sequences.

Copying a migrated template (CREATE DATABASE ... TEMPLATE) costs far less than migrating anew.
"""

from __future__ import annotations

import secrets

from sqlalchemy import create_engine, make_url, text


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


def _name(url: str) -> str:
    name = make_url(url).database
    if not name:
        raise ValueError("the URL names no database")
    return name


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'
