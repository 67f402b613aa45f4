"""Feed lists and crawlers: an OPML import becomes RSS crawlers, a user's RSS crawlers become
an OPML export. The crawlers are created by crawlers.create_batch, all or none, through the
same checks as any create; its errors are told in the file's terms (the outline).

A feed is imported once: a feed listed again in the file, or one the user already crawls
with the same keyword filter (a crawler of theirs lists it), is skipped, so importing a
file twice creates its crawlers once. An export's crawler outlines are crawlers whole, with
their own keywords and settings (blackwidow.crawler_outlines): one the user has is not made
again. Crawler names are unique per user: a group's name (a feed's title, a category) the
user's crawlers hold is told apart as `Blog (2)`; a crawler outline's name is the crawler's
own, so two outlines of one name the user has no crawler of are a conflict naming the second."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from sqlalchemy.orm import Session

from blackwidow import crawler_names, crawler_outlines, crawlers, name_rule, opml
from blackwidow.auth import Caller
from blackwidow.core.domain_errors import DomainError, Invalid
from blackwidow.models import Crawler
from sources.filters import filter_key
from sources.rss.query import MAX_FEEDS
from sources.urls import canonical_url

GROUPINGS = ("one-each", "outline", "one-all")
_FEED_FIELD = re.compile(r"^crawlers\.(\d+)\.query\.feeds\.(\d+)")
_ENTRY_FIELD = re.compile(r"^crawlers\.(\d+)\.?(.*)")
_KEYWORDS_FIELD = re.compile(r"^crawlers\.\d+\.query\.(keywords(\.\d+)?)")


@dataclass(frozen=True)
class Planned:
    """A crawler an import will create, with the feeds (and so outlines) it came from."""

    name: str
    feeds: list[opml.Feed]


@dataclass(frozen=True)
class Skipped:
    """A feed an import did not take: `crawler_id` is the user's crawler that already fetches
    it with the same keywords; None when the file listed it before."""

    feed: opml.Feed
    crawler_id: int | None


@dataclass(frozen=True)
class Imported:
    crawlers: list[Crawler]
    skipped: list[Skipped]
    existing: list[crawler_outlines.Existing]


def import_feeds(
    session: Session,
    caller: Caller,
    subscriptions: opml.Subscriptions,
    group_by: str,
    keywords: Sequence[str],
    most: int,
) -> Imported:
    """Create the caller's crawlers for the feeds they do not crawl yet, grouped as asked, and
    for the crawler outlines they have no crawler of, in this transaction, or none. More than
    `most` new feeds is refused: one import is one batch create, and a batch is bounded."""
    crawlers.owner(caller)  # the admin owns no crawlers: refused before reading any
    if keywords and subscriptions.crawlers:
        where = subscriptions.crawlers[0].where
        message = f"keywords: not for a file of crawlers, which carry their own ({where})"
        raise Invalid(message, "keywords")
    owned = crawlers.listing(session, caller, source="rss")
    outlines, existing = crawler_outlines.sorted_out(owned, subscriptions.crawlers)
    fresh, skipped = _fresh(owned, subscriptions.feeds, keywords)
    new_feeds = len(fresh) + sum(len(outline.feeds) for outline in outlines)
    if new_feeds > most:
        message = f"body: {new_feeds} new feeds, more than one import takes ({most})"
        raise Invalid(message, "body")
    planned = plan(replace(subscriptions, feeds=fresh), group_by)
    held = crawler_names.taken(session, crawlers.owner(caller)) | {o.name for o in outlines}
    planned = apart(planned, held)
    made = _create(session, caller, outlines, planned, keywords) if outlines or planned else []
    return Imported(made, skipped, existing)


def _fresh(
    owned: Sequence[Crawler], feeds: Sequence[opml.Feed], keywords: Sequence[str]
) -> tuple[list[opml.Feed], list[Skipped]]:
    """The feeds to import, in file order, and those skipped; URLs compared in the canonical
    form the source key uses (`HTTPS://Host:443/` is `https://host/`)."""
    wanted = filter_key(keywords)
    crawled: dict[str, int | None] = {
        _spelling(url): crawler.id
        for crawler in owned
        if filter_key(crawler.query.get("keywords", [])) == wanted
        for url in crawler.query["feeds"]
    }
    fresh: list[opml.Feed] = []
    skipped: list[Skipped] = []
    for feed in feeds:
        spelling = _spelling(feed.url)
        if spelling in crawled:
            skipped.append(Skipped(feed, crawled[spelling]))
            continue
        crawled[spelling] = None
        fresh.append(feed)
    return fresh, skipped


def _spelling(url: str) -> str:
    try:
        return canonical_url(url)
    except ValueError:  # a port out of range: the create's checks refuse it, naming it
        return url


def plan(subscriptions: opml.Subscriptions, group_by: str) -> list[Planned]:
    """The crawlers for these feeds: one each; one per category path (`Tech/Python`; the
    feeds outside any in one named after the file, or `Unfiled`); or one for all. A group of
    more feeds than a crawler takes is split: `Tech`, `Tech (2)`."""
    unfiled = "Imported feeds" if group_by == "one-all" else "Unfiled"
    fallback = subscriptions.title or unfiled
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


def apart(planned: Sequence[Planned], held: set[str]) -> list[Planned]:
    """The planned crawlers named apart from the names `held` and from each other, as
    `Blog`, `Blog (2)`: a user's crawler names are unique, and these names are the import's
    own making (feed titles, categories), not the user's choice, so what a name may not
    hold is made a space (blackwidow.name_rule.made_up) rather than refused. Adds to `held`."""
    named = []
    for crawler in planned:
        name = crawler_names.free_name(name_rule.made_up(crawler.name), held)
        held.add(name)
        named.append(replace(crawler, name=name))
    return named


def _create(
    session: Session,
    caller: Caller,
    outlines: Sequence[opml.CrawlerOutline],
    planned: Sequence[Planned],
    keywords: Sequence[str],
) -> list[Crawler]:
    """Create the crawler outlines' crawlers, then the planned ones, in this transaction, or
    none; an invalid feed is named by its outline and URL, a setting by its attribute."""
    entries = [crawler_outlines.entry(outline) for outline in outlines]
    entries += [_entry(crawler, keywords) for crawler in planned]
    try:
        return crawlers.create_batch(session, caller, entries)
    except DomainError as error:
        raise _in_file_terms(error, outlines, planned) from None


def _entry(crawler: Planned, keywords: Sequence[str]) -> dict[str, Any]:
    query: dict[str, Any] = {"feeds": [feed.url for feed in crawler.feeds]}
    if keywords:
        query["keywords"] = list(keywords)
    return {"name": crawler.name, "source": "rss", "query": query}


def _in_file_terms(
    error: DomainError, outlines: Sequence[opml.CrawlerOutline], planned: Sequence[Planned]
) -> DomainError:
    """`crawlers.3.query.feeds.0: ...` becomes `body.outline[7] (URL): ...`, field the outline;
    a keyword the query refuses is the `keywords` argument's."""
    entry = _ENTRY_FIELD.match(error.field or "")
    if entry is not None and int(entry[1]) < len(outlines):
        inner = error.reworded(error.message, entry[2] or None)
        return crawler_outlines.in_file_terms(inner, outlines[int(entry[1])])
    reason = error.message.split(": ", 1)[-1]
    keyword = _KEYWORDS_FIELD.match(error.field or "")
    if keyword is not None:
        return error.reworded(f"{keyword[1]}: {reason}", keyword[1])
    found = _FEED_FIELD.match(error.field or "")
    if found is None:
        return error
    feed = planned[int(found[1]) - len(outlines)].feeds[int(found[2])]
    where = feed.where
    return error.reworded(f"{where} ({feed.url}): {reason}", where)


def document(listed: Sequence[Crawler], titles: Mapping[str, str]) -> bytes:
    """RSS crawlers as OPML: an outline per crawler, named after it, holding its feeds (titled
    as `titles` say, by URL) and carrying what else defines it; importing it makes the same
    crawlers again, and nothing where they are."""
    return opml.write("Black Widow feeds", [crawler_outlines.written(c, titles) for c in listed])
