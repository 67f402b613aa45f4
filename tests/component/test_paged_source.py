"""The configured sources (page, json) against the local listing site: walks, loops, limits,
conditional polls, failures; page by page by hand, and once on a running fetch scheduler."""

from __future__ import annotations

import functools
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import pytest

from sources import jsonapi, page
from sources.fetch.fetcher import GuardedFetcher
from sources.fetch.scheduler import FetchScheduler, NextPoll
from sources.model import DataSource, SubscriberSpec
from sources.page.extract import PagePaths, extract_page
from sources.paged import PagedSource
from sources.source_type import SourceContext
from tests.servers.listing_site import ListingSite, Post
from tests.support import FakeClock, SinkRecorder, wait_until

INTERVAL = 60.0
PAGE_INTERVAL = 2.0
NOW = 1000.0

PAGE_QUERY = {
    "items": "//div[@class='post']",
    "fields": {
        "title": ".//h2/a",
        "url": ".//h2/a/@href",
        "author": ".//span[@class='author']",
        "published_at": ".//time/@datetime",
        "text": ".//p",
    },
    "next": "//a[@rel='next']/@href",
    "page_limit": 5,
    "page_interval": PAGE_INTERVAL,
}
JSON_FIELDS = {"id": "$.id", "title": "$.title", "url": "$.links.html", "author": "$.user.name"}
CURSOR_QUERY = {
    "items": "$.data[*]",
    "fields": JSON_FIELDS,
    "pagination": {"by": "cursor", "param": "after", "cursor": "$.next"},
    "page_limit": 5,
    "page_interval": PAGE_INTERVAL,
}
PAGES_QUERY = {**CURSOR_QUERY, "pagination": {"by": "page", "param": "page", "start": 1}}


@pytest.fixture
def site() -> Iterator[ListingSite]:
    with ListingSite() as running:
        yield running


def opened(
    source_type: Any,
    query: dict[str, Any],
    scheduler: FetchScheduler | None = None,
    max_bytes: int = 1024 * 1024,
) -> DataSource:
    """A source as a node opens it; with a scheduler whose fetchers never start, the test
    runs the source's job by hand, as a fetcher would."""
    fetcher = GuardedFetcher(allow_hosts=frozenset({"127.0.0.1"}), max_bytes=max_bytes)
    context = SourceContext(fetcher, INTERVAL, scheduler=scheduler or FetchScheduler())
    loaded = source_type.SOURCE_TYPE.query_schema().load(query)
    spec = SubscriberSpec(crawler_id=1, user_id=1, source="x", query=loaded)
    return source_type.SOURCE_TYPE.open("key-1", spec, context)


def walk(source: Any, now: float = NOW) -> list[NextPoll]:
    """Run the source's job until the poll ends (its next due is no page interval away)."""
    outcomes = [source.run(now)]
    while outcomes[-1].due_at <= now + 2 * PAGE_INTERVAL and len(outcomes) < 50:
        outcomes.append(source.run(now))
    return outcomes


def titles(recorder: SinkRecorder) -> list[list[str | None]]:
    return [[item.title for item in batch] for batch in recorder.batches]


def test_a_walk_follows_next_links_and_stops_where_the_listing_loops_back(
    site: ListingSite,
) -> None:
    recorder = SinkRecorder()
    source: Any = opened(page, {**PAGE_QUERY, "url": site.url("/news/1.html")})
    source.start(recorder)

    outcomes = walk(source)

    assert titles(recorder) == [["Five", "Four"], ["Three", "Two"], ["One"]]
    assert [len(site.requests_to(f"/news/{n}.html")) for n in (1, 2, 3)] == [1, 1, 1]
    assert [o.due_at - NOW >= PAGE_INTERVAL for o in outcomes[:2]] == [
        True,
        True,
    ]  # polite, mid-walk
    assert outcomes[-1] == NextPoll(NOW + INTERVAL, retry=False)
    five = recorder.batches[0][0]
    assert five.url == site.url("/news/posts/5.html") and five.id == five.url
    assert (five.author, five.text) == ("ana", "Post number 5")
    assert recorder.batches[0][1].author is None  # a missing field
    assert recorder.batches[1][0].text == "Post number 3"  # from the broken page
    assert recorder.errors == []  # no error, so none reported
    assert len(source.snapshot()) == 5
    assert source.feeds()[0]["entries"] == 5


def test_the_page_limit_bounds_a_walk(site: ListingSite) -> None:
    recorder = SinkRecorder()
    source: Any = opened(page, {**PAGE_QUERY, "url": site.url("/news/1.html"), "page_limit": 2})
    source.start(recorder)

    walk(source)

    assert titles(recorder) == [["Five", "Four"], ["Three", "Two"]]
    assert site.requests_to("/news/3.html") == []


def test_an_unchanged_first_page_is_a_304_and_nothing_more_is_read(site: ListingSite) -> None:
    recorder = SinkRecorder()
    source: Any = opened(page, {**PAGE_QUERY, "url": site.url("/news/1.html")})
    source.start(recorder)
    walk(source)

    outcomes = walk(source, NOW + INTERVAL)

    first, again = site.requests_to("/news/1.html")
    assert "If-None-Match" not in first.headers and again.headers["If-None-Match"]
    assert len(site.requests_to("/news/2.html")) == 1
    assert outcomes == [NextPoll(NOW + 2 * INTERVAL)]
    assert len(recorder.batches) == 3


def test_a_new_post_is_delivered_alone_on_the_next_walk(site: ListingSite) -> None:
    recorder = SinkRecorder()
    source: Any = opened(page, {**PAGE_QUERY, "url": site.url("/news/1.html")})
    source.start(recorder)
    walk(source)
    site.publish(Post(6, "Six", "cy"))

    walk(source, NOW + INTERVAL)

    assert titles(recorder)[3:] == [["Six"]]
    assert len(source.snapshot()) == 6


@pytest.mark.parametrize(
    ("query", "path", "pages"),
    [(CURSOR_QUERY, "/api/cursor", 3), (PAGES_QUERY, "/api/pages?page=1", 4)],
    ids=["cursor", "page-number"],
)
def test_a_json_api_is_walked_by_cursor_and_by_page_number(
    site: ListingSite, query: dict[str, Any], path: str, pages: int
) -> None:
    recorder = SinkRecorder()
    source: Any = opened(jsonapi, {**query, "url": site.url(path.split("?")[0])})
    source.start(recorder)

    outcomes = walk(source)

    delivered = [item for batch in recorder.batches for item in batch]
    assert [item.id for item in delivered] == [f"post-{n}" for n in (5, 4, 3, 2, 1)]
    assert delivered[0].url == site.url("/news/posts/5.html")
    assert (delivered[0].author, delivered[1].author) == ("ana", None)
    assert len(outcomes) == pages  # the page-number walk ends on its first empty page
    walk(source, NOW + INTERVAL)
    assert [len(batch) for batch in recorder.batches] == [2, 2, 1]  # the second poll: a 304
    assert site.requests_to(path)[-1].headers["If-None-Match"]


def test_a_failing_listing_reports_its_error_and_backs_off(site: ListingSite) -> None:
    recorder = SinkRecorder()
    source: Any = opened(page, {**PAGE_QUERY, "url": site.url("/news/gone.html")})
    source.start(recorder)

    outcome = source.run(NOW)

    assert outcome == NextPoll(NOW + 2 * INTERVAL, retry=True)
    assert recorder.errors == [f"{site.url('/news/gone.html')}: HTTP 404"]
    assert recorder.failing == [True]
    assert source.feeds()[0]["error_streak"] == 1


def test_a_walk_that_fails_midway_resumes_without_delivering_anything_twice(
    site: ListingSite,
) -> None:
    recorder = SinkRecorder()
    source: Any = opened(page, {**PAGE_QUERY, "url": site.url("/news/1.html")})
    source.start(recorder)
    site.fail("/news/2.html")
    outcomes = walk(source)
    site.fail("/news/2.html", failing=False)

    walk(source, outcomes[-1].due_at)

    assert outcomes[-1] == NextPoll(NOW + 2 * INTERVAL, retry=True)
    assert titles(recorder) == [["Five", "Four"], ["Three", "Two"], ["One"]]
    page_two = site.url("/news/2.html")
    assert recorder.errors == [f"{site.url('/news/1.html')}: {page_two}: HTTP 500", None]
    assert recorder.failing == [True, False]


def test_an_oversized_page_is_refused_by_the_fetchers_cap(site: ListingSite) -> None:
    recorder = SinkRecorder()
    source: Any = opened(page, {**PAGE_QUERY, "url": site.url("/news/1.html")}, max_bytes=100)
    source.start(recorder)

    source.run(NOW)

    assert recorder.batches == []
    assert "response larger than 100 bytes" in (recorder.errors[0] or "")


def test_a_stopped_source_reads_no_further_page(site: ListingSite) -> None:
    recorder = SinkRecorder()
    source: Any = opened(page, {**PAGE_QUERY, "url": site.url("/news/1.html")})
    source.start(recorder)
    source.run(NOW)

    source.stop()
    source.run(NOW)

    assert site.requests_to("/news/2.html") == [] and len(recorder.batches) == 1


def test_on_a_running_scheduler_the_whole_listing_is_delivered(site: ListingSite) -> None:
    scheduler = FetchScheduler(fetchers=2, name="test-paged")
    scheduler.start()
    recorder = SinkRecorder()
    source = opened(
        page, {**PAGE_QUERY, "url": site.url("/news/1.html"), "page_interval": 0.05}, scheduler
    )
    try:
        source.start(recorder)
        wait_until(lambda: len(recorder.batches) == 3, timeout=10, what="three pages delivered")
    finally:
        source.stop()
        scheduler.stop()
    assert isinstance(source, PagedSource)
    assert [item.title for batch in recorder.batches for item in batch][-1] == "One"


def scheduled(crawler_id: int, schedule: dict[str, Any]) -> SubscriberSpec:
    return SubscriberSpec(crawler_id, 1, "page", {}, schedule=schedule)


def test_a_listing_polls_on_its_subscribers_schedule_and_re_plans_when_one_joins(
    site: ListingSite,
) -> None:
    clock = FakeClock(NOW)
    fetcher = GuardedFetcher(allow_hosts=frozenset({"127.0.0.1"}))
    paths = PagePaths.of(page.SOURCE_TYPE.query_schema().load(PAGE_QUERY | {"url": "http://x"}))
    source = PagedSource(
        "key-1",
        site.url("/news/1.html"),
        functools.partial(extract_page, paths),
        fetcher,
        INTERVAL,
        page_limit=5,
        page_interval=PAGE_INTERVAL,
        scheduler=FetchScheduler(clock=clock),
        clock=clock,
    )
    source.attach(scheduled(1, {"every": 300}))
    source.start(SinkRecorder())

    assert walk(source)[-1] == NextPoll(NOW + 300, retry=False)  # not the node's 60 s
    before = datetime.fromisoformat(source.feeds()[0]["next_due_at"])
    source.attach(scheduled(2, {"every": 30}))  # the earliest tick wins, from the last walk
    after = datetime.fromisoformat(source.feeds()[0]["next_due_at"])
    assert 269 < (before - after).total_seconds() < 271


@pytest.mark.parametrize(
    ("schedule", "due_after"),
    [
        (None, INTERVAL),  # the node's interval, from the walk's first page: not its last
        ({"every": 3}, 2 * PAGE_INTERVAL + PAGE_INTERVAL),  # longer walk: a page interval on
    ],
)
def test_the_next_walk_counts_from_the_start_of_the_last(
    site: ListingSite, schedule: dict[str, Any] | None, due_after: float
) -> None:
    """A listing's schedule ticks from each walk's start, as a feed's from each poll, however
    long the walk took (its pages waited for their host, say)."""
    source: Any = opened(page, {**PAGE_QUERY, "url": site.url("/news/1.html")})
    source.attach(scheduled(1, schedule))
    source.start(SinkRecorder())

    outcomes = [source.run(NOW + n * PAGE_INTERVAL) for n in range(3)]  # pages 1, 2, 3

    assert outcomes[-1] == NextPoll(NOW + due_after)
    assert len(site.requests_to("/news/3.html")) == 1
