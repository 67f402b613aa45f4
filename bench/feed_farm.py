"""Feed farm for bench/node_feeds.py: K realistic RSS feeds on 127.0.0.1, counting what it serves.

Feed n has 20 to 50 items and weighs 10 to 60 KB; it answers If-None-Match with 304 while
unchanged. `POST /advance` publishes one new item on a share of the feeds (a rotating block,
so each feed changes once every 1/share advances): advanced once per poll interval, about
that share of conditional GETs are 200s and the rest 304s. `GET /stats` gives the counts.

    .venv/bin/python -m bench.feed_farm --feeds 2000 [--share 0.2]   # prints its URL first
"""

from __future__ import annotations

import argparse
import contextlib
import json
import re
import threading
from email.utils import formatdate
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

FEED_PATH = re.compile(r"/f/(\d+)\.xml")
STARTED_AT = 1_700_000_000.0
SITE = "https://farm.example"
WORDS = ["crawler", "feeds", "routing", "quota", "hub", "node", "python", "redis", "cassandra"]


def shape(n: int) -> tuple[int, int]:
    """(items, approximate bytes) of feed n: spread over 20-50 items and 10-60 KB."""
    return 20 + (n * 7) % 31, 10_000 + ((n * 13) % 51) * 1000


def render(n: int, version: int) -> bytes:
    """Feed n at `version`: items version+1 .. version+count, newest first. The feeds and
    their items link to the farm's site on a public name, as real feeds link to their sites
    (a reader may treat links to loopback apart), wherever the farm itself serves them."""
    count, size = shape(n)
    paragraph_words = max(5, (size // count - 260) // 7)
    parts = [
        '<?xml version="1.0" encoding="utf-8"?><rss version="2.0"><channel>',
        f"<title>Feed {n}</title><link>{SITE}/f/{n}</link>",
        f"<description>Bench feed {n}</description>",
    ]
    for item in range(version + count, version, -1):
        words = " ".join(WORDS[(item + k) % len(WORDS)] for k in range(paragraph_words))
        parts.append(
            f"<item><title>Feed {n} story {item}</title>"
            f"<link>{SITE}/posts/{n}/{item}</link><guid>{SITE}/posts/{n}/{item}</guid>"
            f"<description>&lt;p&gt;{words}&lt;/p&gt;</description>"
            f"<pubDate>{formatdate(STARTED_AT + item * 60, usegmt=True)}</pubDate></item>"
        )
    parts.append("</channel></rss>")
    return "".join(parts).encode()


class Farm:
    """The feeds' versions, a cache of each feed's current body, and the counts."""

    def __init__(self, feeds: int, share: float) -> None:
        self.feeds = feeds
        self.block = max(1, round(1 / share)) if share > 0 else 0
        self.advances = 0
        self.versions = [0] * feeds
        self.bodies: dict[int, tuple[int, bytes]] = {}
        self.counts = {"requests": 0, "200": 0, "304": 0}
        self.fetched: set[int] = set()
        self.lock = threading.Lock()

    def advance(self) -> int:
        with self.lock:
            if self.block:
                for n in range(self.advances % self.block, self.feeds, self.block):
                    self.versions[n] += 1
            self.advances += 1
            return self.advances

    def answer(self, n: int, if_none_match: str | None) -> tuple[int, bytes, str]:
        with self.lock:
            version = self.versions[n]
            etag = f'"{n}-{version}"'
            self.counts["requests"] += 1
            if if_none_match == etag:
                self.counts["304"] += 1
                return 304, b"", etag
            self.counts["200"] += 1
            self.fetched.add(n)
            cached = self.bodies.get(n)
        if cached is None or cached[0] != version:
            cached = (version, render(n, version))
            with self.lock:
                self.bodies[n] = cached
        return 200, cached[1], etag

    def stats(self) -> dict[str, Any]:
        with self.lock:
            return {**self.counts, "feeds_fetched": len(self.fetched), "advances": self.advances}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as real feed servers allow
    wbufsize = 64 * 1024  # one write per response (flushed by the handler after each)
    disable_nagle_algorithm = True
    server: _Server

    def do_GET(self) -> None:
        found = FEED_PATH.fullmatch(self.path)
        if self.path == "/stats":
            self._send(200, json.dumps(self.server.farm.stats()).encode())
        elif found is None or int(found.group(1)) >= self.server.farm.feeds:
            self._send(404, b"no such feed")
        else:
            n = int(found.group(1))
            status, body, etag = self.server.farm.answer(n, self.headers.get("If-None-Match"))
            modified = formatdate(STARTED_AT + self.server.farm.versions[n], usegmt=True)
            self._send(status, body, {"ETag": etag, "Last-Modified": modified})

    def do_POST(self) -> None:
        if self.path == "/advance":
            self._send(200, json.dumps({"advances": self.server.farm.advance()}).encode())
        else:
            self._send(404, b"no such call")

    def _send(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        if status != 304:
            self.send_header("Content-Type", "application/rss+xml; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        """Quiet: thousands of requests a minute."""


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256

    def __init__(self, farm: Farm) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.farm = farm
        self.base_url = f"http://127.0.0.1:{self.server_address[1]}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--feeds", type=int, required=True)
    parser.add_argument("--share", type=float, default=0.2, help="feeds changed per advance")
    args = parser.parse_args()
    server = _Server(Farm(args.feeds, args.share))
    print(server.base_url, flush=True)
    with contextlib.suppress(KeyboardInterrupt):
        server.serve_forever(poll_interval=0.5)


if __name__ == "__main__":
    main()
