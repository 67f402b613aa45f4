"""The node's fetch scheduler running many RSS sources against real local servers.

Politeness decided per response (Retry-After, max-age) is checked on a fake clock through the
source's synchronous round; the threaded scheduler is checked for what it must never do:
grow threads with feeds, or fetch for a stopped source.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from blackwidow.demo.feed_server import FeedServer
from sources.fetch.fetcher import GuardedFetcher
from sources.fetch.scheduler import FetchScheduler, Job, NextPoll
from sources.model import SubscriberSpec
from sources.rss.source import RssSource
from tests.servers.hostile_http import HostileServer
from tests.support import FakeClock, SinkRecorder, wait_until

INTERVAL = 60.0
LOOPBACK = frozenset({"127.0.0.1"})


@pytest.fixture
def server() -> Iterator[HostileServer]:
    with HostileServer() as running:
        yield running


@pytest.fixture
def feeds() -> Iterator[FeedServer]:
    running = FeedServer()
    running.start()
    yield running
    running.stop()


@pytest.fixture
def scheduler() -> Iterator[FetchScheduler]:
    running = FetchScheduler(fetchers=4, host_limit=4, name="test-fetcher")
    running.start()
    yield running
    running.stop()


def source(
    url: str,
    scheduler: FetchScheduler | None = None,
    interval: float = INTERVAL,
    clock: FakeClock | None = None,
) -> RssSource:
    return RssSource(
        f"key-{url}",
        {"feeds": [url]},
        GuardedFetcher(allow_hosts=LOOPBACK, deadline=5.0),
        interval,
        clock or FakeClock(),
        scheduler=scheduler,
    )


def test_many_sources_share_the_scheduler_threads(
    feeds: FeedServer, scheduler: FetchScheduler
) -> None:
    sinks = [SinkRecorder() for _ in range(60)]
    sources = [
        source(f"{feeds.url}/feeds/feed-{n}.xml?items=3", scheduler) for n in range(len(sinks))
    ]
    for running, sink in zip(sources, sinks, strict=True):
        running.start(sink)

    wait_until(lambda: all(sink.batches for sink in sinks), what="every feed delivered")

    names = [thread.name for thread in threading.enumerate()]
    assert not [name for name in names if name.startswith("rss-source")]  # no thread per source
    assert len([name for name in names if name.startswith("test-fetcher")]) == 4 + 1  # and a timer
    assert all(len(sink.batches[0]) == 3 for sink in sinks)
    assert scheduler.stats()["entries"] == 60
    for running in sources:
        running.stop()
    assert scheduler.stats()["entries"] == 0


def test_a_stopped_source_makes_no_more_requests(
    server: HostileServer, scheduler: FetchScheduler
) -> None:
    stopped = source(server.url("/rss"), scheduler, interval=0.01)
    control = source(server.url("/atom"), scheduler, interval=0.01)
    stopped.start(SinkRecorder())
    control.start(SinkRecorder())
    wait_until(lambda: len(server.requests_to("/rss")) >= 3, what="polls of the feed")

    stopped.stop()
    after_stop = len(server.requests_to("/rss"))
    seen = len(server.requests_to("/atom"))
    wait_until(lambda: len(server.requests_to("/atom")) >= seen + 5, what="more control polls")
    control.stop()

    assert len(server.requests_to("/rss")) <= after_stop + 1  # at most the one in flight


def test_the_feed_takes_the_highest_priority_of_its_subscribers(
    feeds: FeedServer, scheduler: FetchScheduler
) -> None:
    shared = source(f"{feeds.url}/feeds/shared.xml", scheduler)
    spec = SubscriberSpec(1, 1, "rss", {"feeds": []}, priority="high")
    shared.attach(SubscriberSpec(2, 1, "rss", {"feeds": []}, priority="low"))
    shared.attach(spec)
    sink = SinkRecorder()
    shared.start(sink)
    shared.detach(1)  # back to low: the entry moves, and still runs

    assert sink.delivered.wait(timeout=10.0)
    shared.stop()


@pytest.mark.parametrize(
    ("path", "reason", "silent_for"),
    [
        ("/too-many", "HTTP 429", 3600),  # Retry-After: 3600 beats a backoff of 120
        ("/unavailable", "HTTP 503", 900),
        ("/error-500", "HTTP 500", 2 * INTERVAL),  # no Retry-After honoured: backoff
    ],
)
def test_a_server_that_asks_to_wait_is_left_alone_that_long(
    server: HostileServer, path: str, reason: str, silent_for: float
) -> None:
    clock = FakeClock()
    sink = SinkRecorder()
    feed = source(server.url(path), clock=clock)
    feed.poll_due(sink)
    clock.now = silent_for - 1
    feed.poll_due(sink)
    asked = len(server.requests_to(path))
    clock.now = silent_for
    feed.poll_due(sink)

    assert (asked, len(server.requests_to(path))) == (1, 2)
    assert sink.errors[0] == f"{server.url(path)}: {reason}"


def test_max_age_longer_than_the_interval_delays_the_next_poll(server: HostileServer) -> None:
    clock = FakeClock()
    feed = source(server.url("/cached"), clock=clock)  # Cache-Control: max-age=600
    feed.poll_due(SinkRecorder())
    clock.now = 599
    feed.poll_due(SinkRecorder())
    before = len(server.requests_to("/cached"))
    clock.now = 600
    feed.poll_due(SinkRecorder())

    assert (before, len(server.requests_to("/cached"))) == (1, 2)


def test_scheduler_stats_count_fetches_and_lateness(
    feeds: FeedServer, scheduler: FetchScheduler
) -> None:
    sink = SinkRecorder()
    running = source(f"{feeds.url}/feeds/stats.xml", scheduler)
    running.start(sink)
    assert sink.delivered.wait(timeout=10.0)
    running.stop()

    stats = scheduler.stats()
    assert stats["fetches"] >= 1
    assert stats["fetchers"] == 4
    assert stats["late_max"] >= 0.0
    assert set(stats) >= {"entries", "in_flight", "due", "late_recent", "failed_jobs"}


def test_an_entry_held_by_its_hosts_gap_starts_when_the_gap_ends() -> None:
    """An entry that comes due just after another start at its host waits out the gap, then
    starts, however far off the next other due time is (no fetch in flight, nothing added)."""
    gap, later = 1.0, 3600.0
    runs: dict[str, int] = {"first": 0, "second": 0}

    def job(key: str) -> Job:
        def run(now: float) -> NextPoll:
            runs[key] += 1
            return NextPoll(now + later)

        return run

    running = FetchScheduler(fetchers=2, host_limit=2, host_gap=gap, name="gap-fetcher")
    running.start()
    try:
        running.add("first", "h", 2, job("first"))
        wait_until(
            lambda: running.stats()["fetches"] == 1 and running.stats()["in_flight"] == 0,
            what="the first fetch done",
        )
        running.add("second", "h", 2, job("second"))  # due now, inside the gap
        wait_until(lambda: runs["second"], timeout=gap + 5, what="the second entry to start")
    finally:
        running.stop()
