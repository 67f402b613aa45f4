"""A crawler's rate on a feed of known pace, through a real hub and node: the API, the CLI and
the node's Prometheus counter agree with the pace once the window has filled, and the rate
falls to zero a window after the feed stops (docs/operations.md "Rates")."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import requests

from blackwidow.demo.feed_server import FeedServer
from tests.integration.conftest import Cluster
from tests.integration.test_cli import Analyst
from tests.support import wait_until

WINDOW = 15.0  # BLACKWIDOW_RATE_WINDOW here: the test lasts about three of them
EVERY = 0.1  # seconds per new entry of the feed
PACE = 1 / EVERY  # items per second
CLOSE = 0.05  # "within a few percent": the poll's lag and a fetch's items over the window
STORED = re.compile(r'^blackwidow_items_stored_total\{source="rss"\} (\S+)$', re.MULTILINE)


class FeedClock:
    """The feed server's clock: the wall clock until stopped, then still, so its feeds
    publish nothing more."""

    def __init__(self) -> None:
        self._stopped_at: float | None = None

    def __call__(self) -> float:
        return time.time() if self._stopped_at is None else self._stopped_at

    def stop(self) -> None:
        self._stopped_at = time.time()


@pytest.fixture
def paced() -> Iterator[tuple[FeedServer, FeedClock]]:
    """The feed server, not started: its feeds begin when it does."""
    clock = FeedClock()
    server = FeedServer(clock=clock)
    yield server, clock
    server.stop()


def stored_on(node_url: str) -> float:
    """The node's Prometheus counter of items stored, as a scrape reads it."""
    found = STORED.search(requests.get(f"{node_url}/metrics", timeout=5).text)
    return float(found.group(1)) if found else 0.0


@pytest.mark.slow
def test_the_rate_is_the_feeds_pace_and_falls_to_zero_after_it_stops(
    cluster: Callable[..., Cluster], paced: tuple[FeedServer, FeedClock], tmp_path: Path
) -> None:
    server, clock = paced
    # polls four times a second: the count the rate is read from is never older than that
    c = cluster(1, BLACKWIDOW_RATE_WINDOW=str(WINDOW), BLACKWIDOW_POLL_INTERVAL="0.25")
    token = c.user()
    feed = f"{server.start()}/feeds/paced.xml?items=0&every={EVERY}"  # publishing from now
    crawler_id = c.crawler(token, [feed])["id"]
    analyst = Analyst(tmp_path / "ana", BLACKWIDOW_HUB_URL=c.hub_url, BLACKWIDOW_TOKEN=token)

    counted = wait_until(
        lambda: c.get(token, crawler_id)["items_collected"] > 0, what="the first items counted"
    )
    assert counted
    counter_from, counted_at = stored_on(c.nodes[0].url), time.time()
    wait_until(
        lambda: c.get(token, crawler_id)["rate_window_seconds"] == WINDOW,
        timeout=WINDOW + 20,
        what="a window counted",
    )
    # the items the feed held when first fetched leave the window, and the poll after
    settled_at = counted_at + WINDOW * 1.2
    wait_until(lambda: time.time() >= settled_at, what="a window after the first items")
    shown = c.get(token, crawler_id)
    counter_rate = (stored_on(c.nodes[0].url) - counter_from) / (time.time() - counted_at)
    assert shown["rate"] == pytest.approx(PACE, rel=CLOSE), shown
    assert counter_rate == pytest.approx(PACE, rel=CLOSE)  # Prometheus' rate() would say so
    said = analyst.lines("crawlers", "show", str(crawler_id))[0]
    assert said["rate"] == pytest.approx(PACE, rel=CLOSE)
    assert said["rate_window_seconds"] == WINDOW
    table = analyst.ok("crawlers", "show", str(crawler_id), "--format", "table")
    per_minute = re.search(r"rate\s+(\d+)/min over 15 s", table)
    assert per_minute and int(per_minute.group(1)) == pytest.approx(60 * PACE, rel=CLOSE), table

    clock.stop()  # the feed publishes no more
    wait_until(
        lambda: c.get(token, crawler_id)["rate"] == 0.0,
        timeout=WINDOW + 15,
        what="the rate to fall to zero a window after the last item",
    )
    stopped = analyst.lines("crawlers", "show", str(crawler_id))[0]
    assert (stopped["rate"], stopped["rate_window_seconds"]) == (0.0, WINDOW)
    listed = analyst.ok("crawlers", "ls", "--format", "table").splitlines()
    row = next(line.split() for line in listed[1:] if line.split()[0] == str(crawler_id))
    assert "0/min" in row
