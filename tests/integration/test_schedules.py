"""Schedules through REST on a real hub and node: a windowed crawler waits as `scheduled`, runs
while its window is open and collects only then; feeds, windows and walks that share one host
each keep their own schedule under the host's politeness."""

from __future__ import annotations

import math
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from tests.servers.listing_site import ListingSite
from tests.support import wait_until

PERIOD, OPEN_FOR = 20, 8  # a window opens at seconds 0, 20 and 40 of each minute, for 8 s
SLACK = 3  # seconds: a cycle to notice the close, and a poll already started then
WATCHED = 10.0  # seconds of the site's clock over which the every-2 feed's fetches are counted
QUARTER = 15 * 60


@pytest.mark.slow
def test_a_windowed_crawler_runs_only_inside_its_window(cluster):
    c = cluster(1)
    token = c.user()
    schedule = {"cron": f"* * * * * */{PERIOD}", "for": OPEN_FOR}
    crawler = c.crawler(token, [c.feed("ticker", items=1, every=1)], schedule=schedule)
    assert crawler["schedule"] == schedule

    def state(wanted: str) -> dict | None:
        got = c.get(token, crawler["id"])
        return got if got["state"] == wanted else None

    waiting = wait_until(lambda: state("scheduled"), what="the crawler scheduled")
    first_start = datetime.fromisoformat(waiting["next_start"])
    wait_until(lambda: state("running"), what="the window to open")
    again = wait_until(lambda: state("scheduled"), what="the window to close")
    assert datetime.fromisoformat(again["next_start"]) > first_start
    assert again["node_id"] is None
    node = c.nodes[0]  # the crawler was taken off it: nothing there collects for it now
    wait_until(lambda: not c.node_health(node)["data_sources"], what="the data source stopped")

    items = c.items(token, crawler["id"])
    assert items, "nothing collected while the window was open"
    seconds = [datetime.fromisoformat(item["fetched_at"]).timestamp() for item in items]
    assert all(moment % PERIOD < OPEN_FOR + SLACK for moment in seconds), seconds


def daily_at(moment: datetime, lasting: int) -> dict[str, Any]:
    """A daily window opening at `moment`'s minute (UTC)."""
    return {"cron": f"{moment.minute} {moment.hour} * * *", "for": lasting}


def feed(site: ListingSite, name: str, schedule: dict[str, Any]) -> dict[str, Any]:
    query = {"feeds": [site.url(f"/feeds/{name}.xml?items=1&every=1")]}
    return {"name": name, "source": "rss", "query": query, "schedule": schedule}


def page_walk(site: ListingSite, page_limit: int) -> dict[str, Any]:
    """Over the three HTML pages, whose next link loops back to the first."""
    query = {
        "url": site.url("/news/1.html"),
        "items": "//div[@class='post']",
        "fields": {"title": ".//h2/a", "url": ".//h2/a/@href"},
        "next": "//a[@rel='next']/@href",
        "page_limit": page_limit,
        "page_interval": 1,
    }
    return {"name": f"walk-{page_limit}", "source": "page", "query": query}


def cursor_walk(site: ListingSite, page_interval: float) -> dict[str, Any]:
    """Over the three JSON pages of the cursor API."""
    query = {
        "url": site.url("/api/cursor"),
        "items": "$.data[*]",
        "fields": {"id": "$.id", "title": "$.title", "url": "$.links.html"},
        "pagination": {"by": "cursor", "param": "after", "cursor": "$.next"},
        "page_interval": page_interval,
    }
    return {"name": "cursor", "source": "json", "query": query}


@pytest.mark.slow
def test_feeds_windows_and_walks_sharing_a_host_keep_their_schedules(cluster, site):
    """At the default host politeness (2 at once, 0.2 s apart) and a node interval of a
    minute, an every-2 feed keeps its pace beside a cron feed, two windows and three walks
    on its host, and each of those keeps its own.

    The cursor walk and the feed come in one batch: the walk's first page starts, the feed
    0.2 s later (the gap), and the walk's third page 2.1 s after its first, so the feed's
    second poll comes due inside that page's gap, with nothing else due on the node for a
    minute: it must start when the gap ends, not when something else happens."""
    c = cluster(
        1, BLACKWIDOW_FEED_INTERVAL="60", BLACKWIDOW_HOST_CONCURRENCY="2", BLACKWIDOW_HOST_GAP="0.2"
    )
    token = c.user()
    now = datetime.now(UTC)
    created_on = now.timestamp()
    first = [
        feed(site, "quarterly", {"cron": "*/15 * * * *", "timezone": "Europe/Paris"}),
        feed(site, "later", daily_at(now + timedelta(hours=12), 60)),
        feed(site, "opened", daily_at(now - timedelta(minutes=5), 3600)),
        page_walk(site, page_limit=4),
        page_walk(site, page_limit=3),
    ]
    then = [cursor_walk(site, page_interval=1.05), feed(site, "every-2", {"every": 2})]

    def fetches(name: str) -> list[float]:
        return [seen.at for seen in site.requests_to(name)]

    c.batch(token, first)
    wait_until(lambda: len(fetches("/news/3.html")) == 2, what="both page walks to end")
    c.batch(token, then)
    every_2 = "/feeds/every-2.xml?items=1&every=1"
    start = wait_until(lambda: fetches(every_2), what="the every-2 feed polled")[0]
    wait_until(lambda: site.now() > start + WATCHED, timeout=WATCHED + 5, what="the watch")

    polled = [at - start for at in fetches(every_2) if at <= start + WATCHED]
    assert len(polled) >= 3, polled  # 5 on time
    quarters = math.floor(time.time() / QUARTER) - math.floor(created_on / QUARTER)
    assert 1 <= len(fetches("/feeds/quarterly.xml?items=1&every=1")) <= 1 + quarters
    assert fetches("/feeds/later.xml?items=1&every=1") == []
    assert len(fetches("/feeds/opened.xml?items=1&every=1")) == 1  # at the node's interval
    for page in ("/news/1.html", "/news/2.html", "/news/3.html"):
        assert len(fetches(page)) == 2  # each walk read it once, and does not start again
    for page in ("/api/cursor", "/api/cursor?after=Mg%3D%3D", "/api/cursor?after=NA%3D%3D"):
        assert len(fetches(page)) == 1
