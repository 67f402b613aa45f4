"""The sample-feed server, in-process with a fake clock, and once as its own process."""

from __future__ import annotations

import calendar
import http.client
import select
import subprocess
import sys
from collections.abc import Iterator
from email.message import Message
from pathlib import Path
from urllib.parse import urlsplit

import feedparser
import pytest

from blackwidow.demo.feed_server import FeedServer
from tests.support import FakeClock

REPO_ROOT = Path(__file__).resolve().parents[2]
START = 1_700_000_000.0


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(START)


@pytest.fixture
def feeds(clock: FakeClock) -> Iterator[FeedServer]:
    server = FeedServer(clock=clock)
    server.start()
    yield server
    server.stop()


def get(url: str, headers: dict[str, str] | None = None) -> tuple[int, Message, bytes]:
    """Plain http.client, so no proxy settings ever send a loopback request elsewhere."""
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=5)
    try:
        target = f"{parts.path}?{parts.query}" if parts.query else parts.path
        connection.request("GET", target, headers=headers or {})
        response = connection.getresponse()
        return response.status, response.headers, response.read()
    finally:
        connection.close()


def entries(url: str) -> list[feedparser.FeedParserDict]:
    status, _, body = get(url)
    assert status == 200
    parsed = feedparser.parse(body)
    assert not parsed.bozo, parsed.get("bozo_exception")
    return parsed.entries


def numbers(url: str) -> list[int]:
    return [int(entry.id.rsplit("/", 1)[1]) for entry in entries(url)]


def test_static_feed_entries_are_deterministic_and_newest_first(feeds: FeedServer) -> None:
    found = entries(f"{feeds.url}/feeds/tech-news.xml?items=3")
    assert [entry.title for entry in found] == [
        "Tech-News story 3: redis",
        "Tech-News story 2: cassandra",
        "Tech-News story 1: python",
    ]
    newest = found[0]
    assert newest.id == newest.link == f"{feeds.url}/posts/tech-news/3"
    assert newest.guidislink is False
    assert "redis" in newest.summary
    assert calendar.timegm(newest.published_parsed) == START + 3


def test_default_feed_holds_ten_entries_and_stays_put(feeds: FeedServer, clock: FakeClock) -> None:
    assert numbers(f"{feeds.url}/feeds/python.xml") == list(range(10, 0, -1))
    clock.now += 3600
    assert numbers(f"{feeds.url}/feeds/python.xml?every=0") == list(range(10, 0, -1))


def test_feed_grows_one_entry_every_period(feeds: FeedServer, clock: FakeClock) -> None:
    url = f"{feeds.url}/feeds/growing.xml?items=2&every=1.5"
    assert numbers(url) == [2, 1]
    clock.now += 2.9
    assert numbers(url) == [3, 2, 1]
    clock.now += 0.1
    assert numbers(url) == [4, 3, 2, 1]


def test_feed_shows_only_the_newest_fifty(feeds: FeedServer) -> None:
    assert numbers(f"{feeds.url}/feeds/big.xml?items=120") == list(range(120, 70, -1))


@pytest.mark.parametrize("tag_form", ["{}", "W/{}", '"other", {}', "*"])
def test_unchanged_feed_answers_304(feeds: FeedServer, clock: FakeClock, tag_form: str) -> None:
    url = f"{feeds.url}/feeds/cached.xml?items=4&every=10"
    status, headers, _ = get(url)
    etag = headers["ETag"]
    assert status == 200 and etag and headers["Last-Modified"]
    status, headers, body = get(url, {"If-None-Match": tag_form.format(etag)})
    assert (status, headers["ETag"], body) == (304, etag, b"")
    if tag_form != "*":
        clock.now += 10
        status, headers, _ = get(url, {"If-None-Match": tag_form.format(etag)})
        assert status == 200 and headers["ETag"] != etag


@pytest.mark.parametrize("path", ["/feeds/Bad_Name.xml", "/feeds/news.rss", "/elsewhere"])
def test_unknown_paths_are_404(feeds: FeedServer, path: str) -> None:
    assert get(f"{feeds.url}{path}")[0] == 404


@pytest.mark.parametrize(
    "query", ["items=abc", "items=-1", "items=", "every=x", "every=-1", "every=nan", "every=0.001"]
)
def test_bad_query_values_are_400(feeds: FeedServer, query: str) -> None:
    status, _, body = get(f"{feeds.url}/feeds/news.xml?{query}")
    assert status == 400 and body


def test_index_lists_example_feeds(feeds: FeedServer) -> None:
    status, _, body = get(f"{feeds.url}/")
    assert status == 200
    assert f"{feeds.url}/feeds/python.xml" in body.decode()


def test_runs_as_a_program_printing_its_url_first() -> None:
    command = [sys.executable, "-m", "blackwidow.demo.feed_server", "--port", "0"]
    with subprocess.Popen(command, cwd=REPO_ROOT, stdout=subprocess.PIPE, text=True) as server:
        try:
            assert server.stdout is not None
            readable, _, _ = select.select([server.stdout], [], [], 10)
            assert readable, "the feed server printed no URL within 10 s"
            url = server.stdout.readline().strip()
            assert url.startswith("http://127.0.0.1:")
            assert len(entries(f"{url}/feeds/python.xml?items=2")) == 2
            server.terminate()
            assert server.wait(timeout=10) == 0
        finally:
            server.kill()
