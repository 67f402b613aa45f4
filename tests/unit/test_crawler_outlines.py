"""Crawler outlines matched with the user's crawlers: the same definition is the same crawler
(feeds and keywords as the source key and the filter compare them), a crawler of the name
defined otherwise is a difference, and each crawler answers one outline at most."""

from __future__ import annotations

from typing import Any

import pytest

from blackwidow import crawler_outlines, opml
from blackwidow.models import Crawler

A = {"feeds": ["https://a.example/rss"], "keywords": ["Python", "rust"]}
A_SPELT_OTHERWISE = {"feeds": ["HTTPS://A.example:443/rss"], "keywords": ["RUST", "python"]}
B = {"feeds": ["https://a.example/rss"], "keywords": ["go"]}


def crawler(crawler_id: int, name: str, query: dict[str, Any], **columns: Any) -> Crawler:
    defaults = {"item_limit": None, "retention_days": None, "recollect_after": None}
    defaults |= {"schedule": None, "enabled": True, "priority": "normal"}
    return Crawler(id=crawler_id, name=name, source="rss", query=query, **(defaults | columns))


def outline(n: int, name: str, query: dict[str, Any], **settings: Any) -> opml.CrawlerOutline:
    where = f"body.outline[{n}]"
    feeds = [
        opml.Feed(url, url, (), f"{where}.outline[{i}]") for i, url in enumerate(query["feeds"])
    ]
    return opml.CrawlerOutline(name, feeds, {"keywords": query["keywords"], **settings}, where)


@pytest.mark.parametrize(
    ("owned", "outlines", "fresh", "existing"),
    [
        ([], [outline(0, "news", A)], [0], []),
        ([crawler(1, "news", A)], [outline(0, "news", A_SPELT_OTHERWISE)], [], [(0, 1, [])]),
        ([crawler(1, "news", A)], [outline(0, "news", B)], [], [(0, 1, ["keywords"])]),
        (
            [crawler(1, "news", A)],
            [outline(0, "news", A, item_limit=5, schedule={"every": 60}, enabled=False)],
            [],
            [(0, 1, ["item_limit", "schedule", "enabled"])],
        ),
        ([crawler(1, "other", A)], [outline(0, "news", A)], [0], []),
        (  # two of one name, in another order: each answers its own
            [crawler(1, "news", A), crawler(2, "news", B)],
            [outline(0, "news", B), outline(1, "news", A)],
            [],
            [(0, 2, []), (1, 1, [])],
        ),
        (  # the same crawler answers the outline it equals, though another comes first
            [crawler(1, "news", B)],
            [outline(0, "news", A), outline(1, "news", B)],
            [0],
            [(1, 1, [])],
        ),
        (  # one crawler, two outlines of its name: the second is a crawler to make
            [crawler(1, "news", A)],
            [outline(0, "news", A), outline(1, "news", A)],
            [1],
            [(0, 1, [])],
        ),
    ],
)
def test_outlines_are_matched_with_the_users_crawlers(
    owned: list[Crawler],
    outlines: list[opml.CrawlerOutline],
    fresh: list[int],
    existing: list[tuple[int, int, list[str]]],
) -> None:
    made, kept = crawler_outlines.sorted_out(owned, outlines)
    assert [outlines.index(o) for o in made] == fresh
    assert [(outlines.index(e.outline), e.crawler_id, e.differs) for e in kept] == existing


def test_a_crawler_is_written_with_every_setting_and_read_back_as_its_create_body() -> None:
    feeds = ["https://a.example/rss", "https://b.example/rss"]
    query = {**A, "feeds": feeds, "url_keys": {"drop": ["ref"], "keep": []}}
    made = crawler(1, "news", query, item_limit=9, schedule={"every": 60}, priority="low")
    written = crawler_outlines.written(made, {feeds[0]: "The first feed"})
    # the feed's own title where a node has read it, else its URL
    assert written.feeds == [(feeds[0], "The first feed"), (feeds[1], feeds[1])]
    back = opml.read(opml.write("Mine", [written])).crawlers[0]
    assert crawler_outlines.entry(back) == {
        "name": "news",
        "source": "rss",
        "query": query,
        "item_limit": 9,
        "schedule": {"every": 60},
        "enabled": True,
        "priority": "low",
    }
