"""RssSource against the hostile local server, round by round on a fake clock, and once threaded."""

from __future__ import annotations

import threading
from collections.abc import Collection, Iterator, Sequence

import pytest
from flask import Flask

import sources.rss.source
from sources.fetch.fetcher import GuardedFetcher
from sources.model import Item, SubscriberSpec
from sources.rss.parse import parse_feed
from sources.rss.source import RssSource
from tests.servers.hostile_http import DATA_DIR, HostileServer
from tests.support import FakeClock, SinkRecorder, served

INTERVAL = 60.0
LOOPBACK = frozenset({"127.0.0.1"})


class RecordingSink(SinkRecorder):
    def ids(self, batch: int) -> list[str]:
        return [item.id for item in self.batches[batch]]


@pytest.fixture
def server() -> Iterator[HostileServer]:
    with HostileServer() as running:
        yield running


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


def rss_source(clock: FakeClock, *urls: str, allow: frozenset[str] = LOOPBACK) -> RssSource:
    fetcher = GuardedFetcher(allow_hosts=allow, deadline=5.0)
    return RssSource("key-1", {"feeds": list(urls), "keywords": []}, fetcher, INTERVAL, clock)


def test_the_first_round_delivers_every_item_of_every_feed(
    server: HostileServer, clock: FakeClock
) -> None:
    recorder = RecordingSink()
    source = rss_source(clock, server.url("/rss"), server.url("/atom"))

    source.poll_due(recorder)

    assert recorder.ids(0) == ["rss-1", "rss-2"]
    assert recorder.ids(1) == ["urn:atom:1", "urn:atom:2"]
    assert recorder.errors == [None]
    assert [item.id for item in source.snapshot()] == recorder.ids(0) + recorder.ids(1)
    assert {item.source for item in source.snapshot()} == {"rss"}


def test_only_new_items_are_delivered_on_the_next_round(
    server: HostileServer, clock: FakeClock
) -> None:
    recorder = RecordingSink()
    source = rss_source(clock, server.url("/rss"))
    source.poll_due(recorder)
    server.rss.add("rss-3", "third")

    clock.now = INTERVAL
    source.poll_due(recorder)

    assert recorder.ids(1) == ["rss-3"]
    assert [item.id for item in source.snapshot()] == ["rss-1", "rss-2", "rss-3"]


def test_an_unchanged_feed_is_a_304_and_delivers_nothing(
    server: HostileServer, clock: FakeClock
) -> None:
    recorder = RecordingSink()
    source = rss_source(clock, server.url("/rss"))
    source.poll_due(recorder)
    first = server.requests_to("/rss")[0]

    clock.now = INTERVAL
    source.poll_due(recorder)

    second = server.requests_to("/rss")[1]
    assert "If-None-Match" not in first.headers
    assert second.headers["If-None-Match"] == server.rss.etag(server.base_url)
    assert second.headers["If-Modified-Since"] == "Mon, 01 Jan 2024 00:00:00 GMT"
    assert len(recorder.batches) == 1
    assert recorder.errors == [None, None]
    assert [item.id for item in source.snapshot()] == ["rss-1", "rss-2"]


def test_a_feed_is_not_polled_before_it_is_due(server: HostileServer, clock: FakeClock) -> None:
    source = rss_source(clock, server.url("/rss"))
    source.poll_due(RecordingSink())

    clock.now = INTERVAL - 1
    source.poll_due(RecordingSink())

    assert len(server.requests_to("/rss")) == 1


def test_a_feed_ttl_longer_than_the_interval_is_honoured(
    server: HostileServer, clock: FakeClock
) -> None:
    source = rss_source(clock, server.url("/data/rss_ttl.xml"))  # <ttl>120</ttl> minutes
    source.poll_due(RecordingSink())

    clock.now = 7200 - 1
    source.poll_due(RecordingSink())
    polls_before = len(server.requests_to("/data/rss_ttl.xml"))
    clock.now = 7200
    source.poll_due(RecordingSink())

    assert (polls_before, len(server.requests_to("/data/rss_ttl.xml"))) == (1, 2)


HOSTILE_FEEDS = [
    ("/invalid-xml", "not a feed ("),
    ("/billion-laughs", "entities are not allowed in feeds"),
    ("/external-entity", "entities are not allowed in feeds"),
    ("/error-500", "HTTP 500"),
]


@pytest.mark.parametrize(("path", "reason"), HOSTILE_FEEDS)
def test_a_hostile_feed_reaches_report_error_and_spares_the_others(
    server: HostileServer, clock: FakeClock, path: str, reason: str
) -> None:
    recorder = RecordingSink()
    source = rss_source(clock, server.url(path), server.url("/atom"))

    source.poll_due(recorder)

    assert recorder.ids(0) == ["urn:atom:1", "urn:atom:2"]
    assert len(recorder.batches) == 1
    [error] = recorder.errors
    assert error is not None
    assert error.startswith(f"{server.url(path)}: {reason}")
    assert ";" not in error  # the good feed is not in the report


def test_a_refused_address_is_reported(server: HostileServer, clock: FakeClock) -> None:
    recorder = RecordingSink()
    source = rss_source(clock, server.url("/rss"), allow=frozenset())

    source.poll_due(recorder)

    assert recorder.errors == [
        f"{server.url('/rss')}: refused address 127.0.0.1 (loopback) for host 127.0.0.1"
    ]
    assert server.requests_to("/rss") == []


def test_a_failing_feed_backs_off_doubling_up_to_ten_intervals(
    server: HostileServer, clock: FakeClock
) -> None:
    source = rss_source(clock, server.url("/error-500"))
    polled_at = []
    for step in range(0, 2100 + 1, 10):
        clock.now = float(step)
        source.poll_due(RecordingSink())
        if len(server.requests_to("/error-500")) > len(polled_at):
            polled_at.append(step)

    # waits after each failure: 2, 4, 8, then 10 (capped) intervals of 60 s
    assert polled_at == [0, 120, 360, 840, 1440, 2040]


def test_items_a_sink_failed_to_take_are_delivered_later(
    server: HostileServer, clock: FakeClock
) -> None:
    recorder = RecordingSink()

    class Broken(RecordingSink):
        def deliver(self, items: Sequence[Item], to: Collection[int] | None = None) -> None:
            raise RuntimeError("subscriber bug")

    broken = Broken()
    broken.errors = recorder.errors

    source = rss_source(clock, server.url("/rss"))
    source.poll_due(broken)
    clock.now = 2 * INTERVAL
    source.poll_due(recorder)

    assert recorder.errors == [f"{server.url('/rss')}: unexpected RuntimeError", None]
    assert recorder.ids(0) == ["rss-1", "rss-2"]
    assert "If-None-Match" not in server.requests_to("/rss")[1].headers


def test_poll_due_needs_a_sink(server: HostileServer, clock: FakeClock) -> None:
    with pytest.raises(RuntimeError, match="no sink"):
        rss_source(clock, server.url("/rss")).poll_due()


def test_the_thread_polls_until_stopped(server: HostileServer) -> None:
    recorder = RecordingSink()
    fetcher = GuardedFetcher(allow_hosts=LOOPBACK, deadline=5.0)
    source = RssSource("key-2", {"feeds": [server.url("/atom")]}, fetcher, INTERVAL)

    source.start(recorder)
    try:
        assert recorder.delivered.wait(timeout=10.0)
    finally:
        source.stop()

    assert recorder.ids(0) == ["urn:atom:1", "urn:atom:2"]
    assert "rss-source-key-2" not in {thread.name for thread in threading.enumerate()}


def test_the_same_document_again_without_validators_is_not_parsed_again(
    server: HostileServer, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    parsed: list[str] = []

    def counted_parse(body: bytes, url: str, *args: object) -> object:
        parsed.append(url)
        return parse_feed(body, url, *args)

    monkeypatch.setattr(sources.rss.source, "parse_feed", counted_parse)  # a spy on the real parser
    recorder = RecordingSink()
    source = rss_source(clock, server.url("/data/rss_guid.xml"))
    source.poll_due(recorder)

    clock.now = INTERVAL
    source.poll_due(recorder)

    assert len(server.requests_to("/data/rss_guid.xml")) == 2
    assert len(parsed) == 1
    assert len(recorder.batches) == 1 and recorder.errors == [None, None]


def test_each_feed_shows_its_health(server: HostileServer, clock: FakeClock) -> None:
    recorder = RecordingSink()
    source = rss_source(clock, server.url("/rss"), server.url("/error-500"))
    before = source.feeds()

    source.poll_due(recorder)
    clock.now = INTERVAL / 2

    healthy, broken = source.feeds()
    after = source.feeds()
    assert all(b["next_due_at"] < a["next_due_at"] for b, a in zip(before, after, strict=True))
    assert (healthy["last_status"], healthy["error"], healthy["error_streak"]) == (200, None, 0)
    assert healthy["entries"] == 2 and healthy["last_success_at"] == healthy["last_fetch_at"]
    assert (broken["last_status"], broken["error"], broken["error_streak"]) == (500, "HTTP 500", 1)
    assert broken["last_success_at"] is None and broken["entries"] is None
    assert broken["last_fetch_at"] is not None
    assert recorder.failing == [False]  # one feed still delivers


def test_a_source_whose_every_feed_fails_says_so_until_one_recovers(clock: FakeClock) -> None:
    app = Flask("flaky")
    up = threading.Event()

    @app.get("/feed.xml")
    def flaky_feed() -> tuple[bytes, int, dict[str, str]]:
        body = (DATA_DIR / "rss_guid.xml").read_bytes()
        return (
            (body, 200, {"Content-Type": "application/rss+xml"}) if up.is_set() else (b"", 503, {})
        )

    recorder = RecordingSink()
    with served(app, "flaky-feed") as url:
        source = rss_source(clock, f"{url}/feed.xml")
        source.poll_due(recorder)
        up.set()
        clock.now = 10 * INTERVAL  # past the backoff
        source.poll_due(recorder)

    assert recorder.failing == [True, False]
    assert recorder.errors[0] is not None and recorder.errors[1] is None
    assert source.feeds()[0]["error_streak"] == 0


def subscriber(crawler_id: int, schedule: dict | None) -> SubscriberSpec:
    return SubscriberSpec(crawler_id, 1, "rss", {"feeds": [], "keywords": []}, schedule=schedule)


def polls_at(source: RssSource, clock: FakeClock, server: HostileServer, *moments: float) -> int:
    """Polls that reached the feed after rounds run at each of `moments`."""
    for moment in moments:
        clock.now = moment
        source.poll_due(RecordingSink())
    return len(server.requests_to("/rss"))


def test_a_feed_polls_on_its_subscribers_every_rather_than_the_interval(
    server: HostileServer, clock: FakeClock
) -> None:
    source = rss_source(clock, server.url("/rss"))
    source.attach(subscriber(1, {"every": 5}))

    assert polls_at(source, clock, server, 0, 4.9) == 1
    assert polls_at(source, clock, server, 5, 9.9, 10) == 3


def test_a_shared_feed_re_plans_when_a_subscriber_with_a_schedule_joins_and_leaves(
    server: HostileServer, clock: FakeClock
) -> None:
    source = rss_source(clock, server.url("/rss"))
    source.attach(subscriber(1, None))  # the node's interval: 60 s

    assert polls_at(source, clock, server, 0, 5) == 1
    source.attach(subscriber(2, {"every": 10}))  # the earliest tick wins: due at 10
    assert polls_at(source, clock, server, 9.9, 10) == 2
    source.detach(2)  # back to the interval, from the last poll
    assert polls_at(source, clock, server, 20, 69.9) == 2
    assert polls_at(source, clock, server, 70) == 3


def test_a_feed_polls_at_its_subscribers_cron_ticks(
    server: HostileServer, clock: FakeClock
) -> None:
    fetcher = GuardedFetcher(allow_hosts=LOOPBACK, deadline=5.0)
    query = {"feeds": [server.url("/rss")], "keywords": []}
    # the source's clock at 0 is 10:00:03Z; a tick each 20 seconds of the minute
    source = RssSource("key-3", query, fetcher, INTERVAL, clock, epoch_offset=1_767_261_603.0)
    source.attach(subscriber(1, {"cron": "* * * * * */20"}))

    assert polls_at(source, clock, server, 0, 16.9) == 1
    assert polls_at(source, clock, server, 17, 36.9, 37) == 3


def test_a_failing_feed_with_a_long_schedule_backs_off_from_the_interval(
    server: HostileServer, clock: FakeClock
) -> None:
    source = rss_source(clock, server.url("/error-500"))
    source.attach(subscriber(1, {"every": 86400}))

    for moment in (0, 2 * INTERVAL - 1, 2 * INTERVAL):  # retried after 2 intervals, not 2 days
        clock.now = moment
        source.poll_due(RecordingSink())

    assert len(server.requests_to("/error-500")) == 2
