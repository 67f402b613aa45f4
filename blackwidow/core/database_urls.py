"""The hub's SQL URL as operators and platforms write it, turned into what SQLAlchemy takes
with the project's drivers; pure, so the start-up check refuses a bad one in one line."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

# the hub's SQL URLs by scheme, as SQLAlchemy is to get them: the project's drivers only
# (psycopg 3 for PostgreSQL). Heroku-style platforms set postgres://, which SQLAlchemy refuses.
DATABASE_SCHEMES = {
    "sqlite": "sqlite",
    "sqlite+pysqlite": "sqlite+pysqlite",
    "postgres": "postgresql+psycopg",
    "postgresql": "postgresql+psycopg",
    "postgresql+psycopg": "postgresql+psycopg",
}


def database_url(raw: str) -> str:
    """`raw` as SQLAlchemy is to get it: postgres:// and postgresql:// with the project's
    driver (postgresql+psycopg://); ValueError for a scheme the hub cannot use, naming only
    the scheme (the rest may hold a password)."""
    if not raw.strip():
        raise ValueError("must not be empty")
    scheme, sep, rest = raw.strip().partition("://")
    scheme = scheme.lower()
    if not sep or scheme not in DATABASE_SCHEMES:
        shown = sep and re.fullmatch(r"[a-z][a-z0-9+.-]{0,30}", scheme)
        got = f"a {scheme}:// URL" if shown else "something else"
        raise ValueError(
            f"expected sqlite:///PATH or postgresql://USER:PASSWORD@HOST/DATABASE, got {got}"
        )
    try:
        urlsplit(f"{scheme}://{rest}").port  # noqa: B018 (reading the port checks it)
    except ValueError:
        raise ValueError("the port is not a number from 0 to 65535") from None
    return f"{DATABASE_SCHEMES[scheme]}://{rest}"
