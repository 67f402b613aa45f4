"""Feed lists and crawlers: an OPML import becomes RSS crawlers, a user's RSS crawlers become
an OPML export. The crawlers are created by crawlers.create_batch, all or none, through the
same checks as any create; its errors are told in the file's terms (the outline)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy.orm import Session

from blackwidow import crawlers, opml
from blackwidow.auth import Caller
from blackwidow.errors import ApiError
from blackwidow.models import Crawler
from sources.rss_query import MAX_FEEDS

GROUPINGS = ("one-each", "outline", "one-all")
NAME_LENGTH = 200  # a crawler's name, at most
_FEED_FIELD = re.compile(r"^crawlers\.(\d+)\.query\.feeds\.(\d+)")
_KEYWORDS_FIELD = re.compile(r"^crawlers\.\d+\.query\.(keywords(\.\d+)?)")


@dataclass(frozen=True)
class Planned:
    """A crawler an import will create, with the feeds (and so outlines) it came from."""

    name: str
    feeds: list[opml.Feed]


def plan(subscriptions: opml.Subscriptions, group_by: str) -> list[Planned]:
    """The crawlers for these feeds: one each; one per category path (`Tech/Python`; the
    feeds outside any in one named after the file); or one for all. A group of more feeds
    than a crawler takes is split: `Tech`, `Tech (2)`."""
    fallback = subscriptions.title or "Imported feeds"
    if group_by == "one-each":
        return [Planned(feed.name, [feed]) for feed in subscriptions.feeds]
    groups: dict[str, list[opml.Feed]] = {}
    for feed in subscriptions.feeds:
        name = fallback if group_by == "one-all" else "/".join(feed.categories) or fallback
        groups.setdefault(name, []).append(feed)
    return [
        Planned(name if part == 0 else f"{name} ({part + 1})", feeds[start : start + MAX_FEEDS])
        for name, feeds in groups.items()
        for part, start in enumerate(range(0, len(feeds), MAX_FEEDS))
    ]


def create(
    session: Session, caller: Caller, planned: Sequence[Planned], keywords: Sequence[str]
) -> list[Crawler]:
    """Create the planned crawlers in this transaction, or none; an invalid feed is named by
    its outline and URL."""
    entries = [_entry(crawler, keywords) for crawler in planned]
    try:
        return crawlers.create_batch(session, caller, entries)
    except ApiError as error:
        raise _in_file_terms(error, planned) from None


def _entry(crawler: Planned, keywords: Sequence[str]) -> dict[str, Any]:
    query: dict[str, Any] = {"feeds": [feed.url for feed in crawler.feeds]}
    if keywords:
        query["keywords"] = list(keywords)
    return {"name": crawler.name[:NAME_LENGTH], "source": "rss", "query": query}


def _in_file_terms(error: ApiError, planned: Sequence[Planned]) -> ApiError:
    """`crawlers.3.query.feeds.0: ...` becomes `body.outline[7] (URL): ...`, field the outline;
    a keyword the query refuses is the `keywords` argument's."""
    reason = error.message.split(": ", 1)[-1]
    keyword = _KEYWORDS_FIELD.match(error.field or "")
    if keyword is not None:
        return ApiError(error.status, error.code, f"{keyword[1]}: {reason}", keyword[1])
    found = _FEED_FIELD.match(error.field or "")
    if found is None:
        return error
    feed = planned[int(found[1])].feeds[int(found[2])]
    where = feed.where
    return ApiError(error.status, error.code, f"{where} ({feed.url}): {reason}", where)


def document(session: Session, caller: Caller) -> bytes:
    """The caller's RSS crawlers (the admin's: all) as OPML: a category per crawler, named
    after it, holding its feeds; importing it by outline makes the same crawlers again."""
    listed = crawlers.listing(session, caller, source="rss")
    return opml.write("Black Widow feeds", [(c.name, c.query["feeds"]) for c in listed])
