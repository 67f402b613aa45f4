"""Crawlers as an OPML export writes them (opml.CrawlerOutline): a crawler's definition in and
out, compared with the crawlers a user has, and errors told in the file's terms.

A crawler outline is imported as a whole: when the user has no crawler of its name it is
created; when one of that name has the same definition, it is the same crawler and nothing is
done; when those of that name all differ, nothing is done either and what differs is said. So
importing an export again creates nothing, and never makes a second crawler of one name."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from blackwidow import crawlers, opml
from blackwidow.core.domain_errors import DomainError
from blackwidow.models import Crawler
from sources.filters import filter_key
from sources.model import DEFAULT_PRIORITY
from sources.rss.query import rss_fetch_target

QUERY_SETTINGS = ("keywords", "url_keys")  # the rest of a crawler outline's settings are columns
COLUMNS = ("item_limit", "retention_days", "recollect_after", "schedule", "enabled", "priority")
_FEED_FIELD = re.compile(r"^query\.feeds\.(\d+)")


@dataclass(frozen=True)
class Existing:
    """A crawler outline not imported, for the user has a crawler of its name: `differs` names
    the fields where that crawler's definition is otherwise (empty: the same crawler)."""

    outline: opml.CrawlerOutline
    crawler_id: int
    differs: list[str]


def written(crawler: Crawler, titles: Mapping[str, str]) -> opml.Written:
    """A crawler as an export writes it; a feed's title is its own where a node has read it
    (`titles`, by URL), else its URL."""
    query = crawler.query
    # keywords always written, an empty filter too: it marks the crawler's outline
    settings = {"keywords": query.get("keywords", []), "url_keys": query.get("url_keys")}
    settings.update({name: getattr(crawler, name) for name in COLUMNS})
    return opml.Written(
        crawler.name, [(url, titles.get(url, url)) for url in query["feeds"]], settings
    )


def entry(outline: opml.CrawlerOutline) -> dict[str, Any]:
    """The crawler create body an outline stands for."""
    query: dict[str, Any] = {"feeds": [feed.url for feed in outline.feeds]}
    query.update({k: v for k, v in outline.settings.items() if k in QUERY_SETTINGS})
    columns = {k: v for k, v in outline.settings.items() if k not in QUERY_SETTINGS}
    return {"name": outline.name, "source": "rss", "query": query, **columns}


def sorted_out(
    owned: Sequence[Crawler], outlines: Sequence[opml.CrawlerOutline]
) -> tuple[list[opml.CrawlerOutline], list[Existing]]:
    """The outlines to create, in file order, and those the user has a crawler of (the same,
    or differing), in file order. Each of the user's crawlers answers one outline at most:
    first an outline of its name and definition, then one of its name only; an outline that
    none answers is created (two of one name: the second is a conflict, names being unique).
    Each outline's query and schedule are checked first: an invalid one is an error, never a
    difference."""
    by_name: dict[str, list[Crawler]] = {}
    for crawler in owned:
        by_name.setdefault(crawler.name, []).append(crawler)
    wanted = {o.where: _definition(_checked(o)) for o in outlines if o.name in by_name}
    answered: dict[str, Existing] = {}
    for outline in (o for o in outlines if o.where in wanted):  # the same crawlers first
        named = by_name[outline.name]
        same = next((c for c in named if _definition(_body(c)) == wanted[outline.where]), None)
        if same is not None:
            named.remove(same)
            answered[outline.where] = Existing(outline, same.id, [])
    for outline in (o for o in outlines if o.where in wanted and o.where not in answered):
        named = by_name[outline.name]
        if named:
            other = named.pop(0)
            theirs, mine = _definition(_body(other)), wanted[outline.where]
            differs = [name for name in mine if mine[name] != theirs[name]]
            answered[outline.where] = Existing(outline, other.id, differs)
    fresh = [outline for outline in outlines if outline.where not in answered]
    return fresh, [answered[o.where] for o in outlines if o.where in answered]


def _checked(outline: opml.CrawlerOutline) -> dict[str, Any]:
    """The outline's create body with its query and schedule as a create stores them."""
    body = entry(outline)
    try:
        body["query"] = crawlers.validated_query("rss", body["query"])
        body["schedule"] = crawlers.validated_schedule(body.get("schedule"))
    except DomainError as error:
        raise in_file_terms(error, outline) from None
    return body


def _body(crawler: Crawler) -> dict[str, Any]:
    return {"query": crawler.query, **{name: getattr(crawler, name) for name in COLUMNS}}


def _definition(body: dict[str, Any]) -> dict[str, Any]:
    """What makes a crawler what it is, in a form two equal crawlers share: feeds and
    url_keys as the source key has them (canonical URLs, in any order); keywords as the
    filter compares them. The body's query is a validated one."""
    query = body["query"]
    target = rss_fetch_target(query)
    return {
        "feeds": target["feeds"],
        "keywords": filter_key(query.get("keywords", [])),
        "url_keys": target.get("url_keys", {}),
        "item_limit": body.get("item_limit"),
        "retention_days": body.get("retention_days"),
        "recollect_after": body.get("recollect_after"),
        "schedule": body.get("schedule"),
        "enabled": body.get("enabled", True),
        "priority": body.get("priority", DEFAULT_PRIORITY),
    }


def in_file_terms(error: DomainError, outline: opml.CrawlerOutline) -> DomainError:
    """An error about an outline's create body, told as the file says it: `query.feeds.0`
    is the feed's outline (and URL), `item_limit` the attribute `blackwidow:itemLimit`, the
    name the outline's `text`."""
    field = error.field or ""
    reason = error.message.split(": ", 1)[-1]
    feed = _FEED_FIELD.match(field)
    if feed is not None and int(feed[1]) < len(outline.feeds):
        where = outline.feeds[int(feed[1])].where
        message = f"{where} ({outline.feeds[int(feed[1])].url}): {reason}"
        return error.reworded(message, where)
    parts = field.split(".")
    setting = parts[1] if parts[0] == "query" and len(parts) > 1 else parts[0]
    if setting == "name":
        where = f"{outline.where}.text"
    elif setting in QUERY_SETTINGS or setting in COLUMNS:
        where = f"{outline.where}.{opml.attribute(setting)}"
    else:  # the feeds as a whole: none, or more than a crawler takes
        where = outline.where
    return error.reworded(f"{where}: {reason}", where)
