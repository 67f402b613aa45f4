"""Crawler names, unique per user: the check a create, a batch or a rename passes (a clash is
a Conflict naming the field `name`), and the `name (2)` a name made up for the user (an OPML
import's) takes when its own is held. The database's unique index `uq_crawlers_user_name`
stands behind the check when two requests race."""

from __future__ import annotations

from collections.abc import Collection, Iterator, Sequence
from contextlib import contextmanager

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from blackwidow.core.domain_errors import Conflict
from blackwidow.models import Crawler
from blackwidow.name_rule import NAME_LENGTH


def taken(session: Session, user_id: int) -> set[str]:
    """Every name the user's crawlers hold."""
    return set(session.scalars(select(Crawler.name).where(Crawler.user_id == user_id)))


def check(
    session: Session,
    user_id: int,
    names: Sequence[str],
    renamed: int | None = None,
    batch: bool = False,
) -> None:
    """Refuse a name another crawler of the user holds, or one a batch gives twice; `renamed`
    is the crawler being renamed, whose own name is no clash. A batch's refusal names its
    entry: `crawlers.3.name`."""
    held = dict(
        session.execute(
            select(Crawler.name, Crawler.id).where(
                Crawler.user_id == user_id, Crawler.name.in_(set(names))
            )
        ).all()
    )
    given: dict[str, int] = {}
    for n, name in enumerate(names):
        holder = held.get(name)
        if holder is not None and holder != renamed:
            refusal = clash(name, f"crawler {holder}")
        elif name in given:
            refusal = clash(name, f"entry {given[name]} of this batch")
        else:
            given[name] = n
            continue
        raise refusal.within(f"crawlers.{n}") if batch else refusal


def clash(name: str, holder: str) -> Conflict:
    """`name: crawler 3 is named 'news' already; a user's crawler names are unique`."""
    message = f"name: {holder} is named {name!r} already; a user's crawler names are unique"
    return Conflict(message, "name")


@contextmanager
def guarded(name: str) -> Iterator[None]:
    """A write of `name` that may lose a race to another request: the unique index's
    IntegrityError is then the same Conflict the check gives."""
    try:
        yield
    except IntegrityError:
        raise clash(name, "a crawler made at the same time") from None


def free_name(name: str, held: Collection[str]) -> str:
    """`name`, or the first of `name (2)`, `name (3)`, ... that is not held, cut to fit
    NAME_LENGTH: how an import names a group whose name the user's crawlers hold, as the
    migration that made names unique renamed the duplicates (0018)."""
    base = name[:NAME_LENGTH]
    candidate, n = base, 1
    while candidate in held:
        n += 1
        suffix = f" ({n})"
        candidate = f"{base[: NAME_LENGTH - len(suffix)]}{suffix}"
    return candidate
