"""Sample-feed server: local RSS feeds that keep publishing, standing in for the web's feed sites.

`blackwidow demo` and the integration tests crawl it instead of the internet. Every feed is
a pure function of its name, its query and the time since the server started, so tests
that inject a clock know exactly what each request returns.
"""

from __future__ import annotations

import argparse
import logging
import math
import re
import signal
import sys
import threading
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from email.utils import formatdate
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlsplit

logger = logging.getLogger(__name__)

WINDOW = 50  # entries a feed shows; older ones drop off, as on a real site
DEFAULT_ITEMS = 10
MIN_EVERY = 0.01  # seconds; faster growth would only overflow the dates
WORDS = ("python", "cassandra", "redis", "crawler", "feeds", "routing", "quota", "hub")
THREAD_NS = "http://purl.org/syndication/thread/1.0"  # Atom threading (RFC 4685)
THREAD_REPLY = f"{{{THREAD_NS}}}in-reply-to"
ET.register_namespace("thr", THREAD_NS)
FEED_PATH = re.compile(r"/feeds/([a-z0-9-]+)\.xml")
EXAMPLES = ("/feeds/python.xml", "/feeds/tech-news.xml?items=5&every=2", "/feeds/big.xml?items=80")


class BadQuery(ValueError):
    """A query value the server refuses with 400."""


@dataclass(frozen=True)
class FeedShape:
    """`items` entries at start, one more every `every` seconds (0: a static feed), up to
    `until` entries (None: for ever)."""

    items: int
    every: float
    until: int | None = None

    def published(self, elapsed: float) -> int:
        total = entries_published(self.items, self.every, elapsed)
        return total if self.until is None else min(total, self.until)


def parse_query(query: str) -> FeedShape:
    """`items`, `every` and `until` (FeedShape) from a feed URL's query."""
    values = dict(parse_qsl(query, keep_blank_values=True))
    try:
        items = int(values.get("items", DEFAULT_ITEMS))
        every = float(values.get("every", 0))
        until = int(values["until"]) if "until" in values else None
    except ValueError as exc:
        raise BadQuery("items and until must be integers and every a number of seconds") from exc
    if items < 0 or not math.isfinite(every) or every < 0:
        raise BadQuery("items and every must not be negative")
    if 0 < every < MIN_EVERY:
        raise BadQuery(f"every must be 0 (a static feed) or at least {MIN_EVERY} seconds")
    if until is not None and until < items:
        raise BadQuery("until must be at least items")
    return FeedShape(items, every, until)


def entries_published(items: int, every: float, elapsed: float) -> int:
    """How many entries a feed holds after `elapsed` seconds of server time."""
    grown = math.floor(elapsed / every) if every > 0 and elapsed > 0 else 0
    return items + grown


def entity_tag(name: str, total: int) -> str:
    return f'"{name}-{total}-{WINDOW}"'


def render_feed(base_url: str, name: str, total: int, started_at: float) -> bytes:
    """RSS 2.0 with entries max(1, total - WINDOW + 1)..total, newest first.

    Entry n is fixed forever: guid and link `<base>/posts/<name>/<n>`, a title and a
    description with word WORDS[(n - 1) % len(WORDS)], published at `started_at + n`.
    Entries come in threads of two: an odd entry has a comments link, and the even entry
    after it answers it (`thr:in-reply-to`), so every pair is one conversation.
    """
    rss = ET.Element("rss", version="2.0")
    channel = ET.SubElement(rss, "channel")
    _text(channel, "title", f"{name.title()} (sample feed)")
    _text(channel, "link", f"{base_url}/feeds/{name}.xml")
    _text(channel, "description", f"Sample stories from {name}, served by the demo feed server.")
    _text(channel, "lastBuildDate", formatdate(started_at + total, usegmt=True))
    for n in range(total, max(1, total - WINDOW + 1) - 1, -1):
        word = WORDS[(n - 1) % len(WORDS)]
        post_url = f"{base_url}/posts/{name}/{n}"
        entry = ET.SubElement(channel, "item")
        _text(entry, "title", f"{name.title()} story {n}: {word}")
        _text(entry, "link", post_url)
        _text(entry, "guid", post_url).set("isPermaLink", "false")
        _text(entry, "description", f"Story {n} from {name} is about {word}.")
        _text(entry, "pubDate", formatdate(started_at + n, usegmt=True))
        if n % 2:
            _text(entry, "comments", f"{post_url}#comments")
        else:
            ET.SubElement(entry, THREAD_REPLY, ref=f"{base_url}/posts/{name}/{n - 1}")
    return ET.tostring(rss, encoding="utf-8", xml_declaration=True)


def _text(parent: ET.Element, tag: str, text: str) -> ET.Element:
    child = ET.SubElement(parent, tag)
    child.text = text
    return child


def _matches(if_none_match: str, etag: str) -> bool:
    """If-None-Match lists tags (maybe weak, maybe `*`); any one equal means unchanged."""
    tags = {tag.strip().removeprefix("W/") for tag in if_none_match.split(",")}
    return etag in tags or "*" in tags


class _FeedHTTPServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], clock: Callable[[], float]) -> None:
        super().__init__(address, _FeedHandler)
        self.clock = clock
        self.started_at = clock()
        host, port = self.server_address[:2]
        self.base_url = f"http://{host}:{port}"


class _FeedHandler(BaseHTTPRequestHandler):
    server: _FeedHTTPServer

    def do_GET(self) -> None:
        parts = urlsplit(self.path)
        if parts.path == "/":
            index = "".join(f"{self.server.base_url}{example}\n" for example in EXAMPLES)
            self._reply(200, "text/plain; charset=utf-8", index.encode())
            return
        found = FEED_PATH.fullmatch(parts.path)
        if found is None:
            self._reply(404, "text/plain; charset=utf-8", b"no such feed\n")
            return
        try:
            shape = parse_query(parts.query)
        except BadQuery as exc:
            self._reply(400, "text/plain; charset=utf-8", f"{exc}\n".encode())
            return
        self._send_feed(found.group(1), shape)

    def _send_feed(self, name: str, shape: FeedShape) -> None:
        """Conditional GET by ETag only: feed readers send If-None-Match, and it wins anyway."""
        server = self.server
        total = shape.published(server.clock() - server.started_at)
        etag = entity_tag(name, total)
        validators = {
            "ETag": etag,
            "Last-Modified": formatdate(server.started_at + total, usegmt=True),
        }
        if _matches(self.headers.get("If-None-Match", ""), etag):
            self._reply(304, None, b"", validators)
            return
        body = render_feed(server.base_url, name, total, server.started_at)
        self._reply(200, "application/rss+xml; charset=utf-8", body, validators)

    def _reply(
        self, status: int, content_type: str | None, body: bytes, extra: Mapping[str, str] = {}
    ) -> None:
        self.send_response(status)
        if content_type is not None:
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
        for header, value in extra.items():
            self.send_header(header, value)
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        logger.debug("feed request %s", format % args)


class FeedServer:
    """The sample-feed server on a daemon thread; port 0 picks a free port."""

    def __init__(
        self, host: str = "127.0.0.1", port: int = 0, clock: Callable[[], float] = time.time
    ) -> None:
        self._address = (host, port)
        self._clock = clock
        self._server: _FeedHTTPServer | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> str:
        """Bind and serve in the background; the clock's reading now is the feeds' start."""
        if self._server is not None:
            raise RuntimeError("feed server already started")
        self._server = _FeedHTTPServer(self._address, self._clock)
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True
        )
        self._thread.start()
        logger.info("feed server started url=%s", self._server.base_url)
        return self._server.base_url

    def stop(self) -> None:
        if self._server is None or self._thread is None:
            return
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
        self._server = self._thread = None

    @property
    def url(self) -> str:
        if self._server is None:
            raise RuntimeError("feed server not started")
        return self._server.base_url


def main(argv: list[str] | None = None) -> int:
    """Serve in the foreground: the base URL is stdout's first line, for whoever started us."""
    parser = argparse.ArgumentParser(description="Serve sample RSS feeds that keep publishing.")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    args = parser.parse_args(argv)
    stopping = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stopping.set())
    server = FeedServer(args.host, args.port)
    try:
        url = server.start()
    except OSError as exc:
        parser.exit(2, f"feed_server: cannot listen on {args.host}:{args.port}: {exc}\n")
    print(url, flush=True)
    stopping.wait()
    server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
