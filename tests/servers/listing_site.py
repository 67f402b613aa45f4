"""A small news site on 127.0.0.1, port 0, for the configured sources (page, json) in tests.

Stands in for the remote sites and APIs those crawlers read. One list of posts, newest
first, two a page, is served as:

- `/news/1.html` .. `/news/3.html`: HTML pages linked by relative "older" links, the third
  one linking back to the first (a loop); the second page's markup is broken; posts may
  lack an author or a date;
- `/api/cursor[?after=C]`: JSON pages chained by an opaque cursor;
- `/api/pages?page=N`: JSON pages by number, empty past the last;
- `/feeds/<name>.xml?every=S`: an RSS feed that grows by an entry every S seconds (the demo
  feed server's feeds), so feeds and listings can share one host;

and any of them fails with a 500 when a test says so. Every request is recorded with the
moment it came, on the site's own clock (`site.now()`).

The first page of each (the HTML first page, the cursor API without a cursor, page 1) has an
ETag and answers a matching If-None-Match with 304. Use it as a context manager (it runs in
a thread) or run it as a module, which prints its URL as the first line.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

from blackwidow.demo.feed_server import FEED_PATH, parse_query, render_feed

PER_PAGE = 2
HTML_PAGES = 3
RSS = "application/rss+xml; charset=utf-8"


@dataclass(frozen=True)
class Post:
    number: int
    title: str
    author: str | None = None
    published_at: str | None = None  # ISO-8601


@dataclass(frozen=True)
class Seen:
    path: str  # with its query string
    headers: dict[str, str]
    at: float = 0.0  # when it came, on the site's clock


def _post_html(post: Post, broken: bool) -> str:
    author = f'<span class="author">{post.author}</span>' if post.author else ""
    when = f'<time datetime="{post.published_at}">then</time>' if post.published_at else ""
    body = f"<p>Post number <b>{post.number}" if broken else f"<p>Post number {post.number}</p>"
    link = (
        f"<a href=posts/{post.number}.html>" if broken else f'<a href="posts/{post.number}.html">'
    )
    return f'<div class="post"><h2>{link}{post.title}</a></h2>{author}{when}{body}</span></div>\n'


def html_page(posts: list[Post], number: int) -> bytes:
    """Page `number` of the HTML listing; the last page's older link goes back to the first."""
    shown = posts[(number - 1) * PER_PAGE : number * PER_PAGE]
    broken = number == 2
    older = number % HTML_PAGES + 1
    items = "".join(_post_html(post, broken) for post in shown)
    return (
        f"<!DOCTYPE html><html><head><title>News {number}</title></head><body>\n"
        f"<h1>News</h1>\n{items}<a class=older rel=next href={older}.html>older</a>\n"
        "</body></html>"
    ).encode()


def _post_json(post: Post) -> dict[str, object]:
    record: dict[str, object] = {"id": f"post-{post.number}", "title": post.title}
    record["links"] = {"html": f"/news/posts/{post.number}.html"}
    if post.author:
        record["user"] = {"name": post.author}
    if post.published_at:
        record["created_at"] = post.published_at
    return record


def api_page(posts: list[Post], start: int, cursor: bool) -> bytes:
    shown = posts[start : start + PER_PAGE]
    answer: dict[str, object] = {"data": [_post_json(post) for post in shown]}
    if cursor:
        more = start + PER_PAGE < len(posts)
        answer["next"] = (
            base64.urlsafe_b64encode(str(start + PER_PAGE).encode()).decode() if more else None
        )
    return json.dumps(answer).encode()


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    timeout = 10

    def do_GET(self) -> None:
        self.server.record(Seen(self.path, dict(self.headers.items()), time.monotonic()))
        parts = urlsplit(self.path)
        params = {k: v[0] for k, v in parse_qs(parts.query).items()}
        with contextlib.suppress(BrokenPipeError, ConnectionResetError, TimeoutError):
            self._route(parts.path, params)

    def _route(self, path: str, params: dict[str, str]) -> None:
        posts = self.server.posts()
        if path in self.server.failing:
            self._reply(500, b"internal error", {})
        elif path.startswith("/news/") and path.removeprefix("/news/") in self.server.pages:
            number = int(path.removeprefix("/news/").removesuffix(".html"))
            self._send(html_page(posts, number), "text/html; charset=utf-8", number == 1)
        elif path == "/api/cursor":
            after = params.get("after")
            start = int(base64.urlsafe_b64decode(after)) if after else 0
            self._send(api_page(posts, start, cursor=True), "application/json", after is None)
        elif path == "/api/pages":
            number = int(params.get("page", "1"))
            body = api_page(posts, (number - 1) * PER_PAGE, cursor=False)
            self._send(body, "application/json", number == 1)
        elif found := FEED_PATH.fullmatch(path):
            self._send(self._feed(found.group(1), urlsplit(self.path).query), RSS, True)
        else:
            self._reply(404, b"not found", {})

    def _feed(self, name: str, query: str) -> bytes:
        server = self.server
        total = parse_query(query).published(time.monotonic() - server.started_at)
        return render_feed(f"http://127.0.0.1:{server.server_port}", name, total, server.started_on)

    def _send(self, body: bytes, content_type: str, validated: bool) -> None:
        headers = {"Content-Type": content_type}
        if validated:
            etag = '"' + hashlib.sha1(body).hexdigest()[:16] + '"'
            headers["ETag"] = etag
            if self.headers.get("If-None-Match") == etag:
                self._reply(304, b"", {"ETag": etag})
                return
        self._reply(200, body, headers)

    def _reply(self, status: int, body: bytes, headers: dict[str, str]) -> None:
        self.send_response(status)
        for name, value in {"Content-Length": str(len(body)), **headers}.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        """Quiet: test output is for the tests."""


class _Server(ThreadingHTTPServer):
    daemon_threads = False
    block_on_close = True

    def __init__(self, posts: list[Post]) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.pages = {f"{n}.html" for n in range(1, HTML_PAGES + 1)}
        self._posts = posts
        self.failing: set[str] = set()  # paths answered with a 500
        self.started_at, self.started_on = time.monotonic(), time.time()  # the feeds grow since
        self._seen: list[Seen] = []
        self._lock = threading.Lock()

    def posts(self) -> list[Post]:
        with self._lock:
            return list(self._posts)

    def publish(self, post: Post) -> None:
        with self._lock:
            self._posts.insert(0, post)

    def record(self, seen: Seen) -> None:
        with self._lock:
            self._seen.append(seen)

    def seen(self) -> list[Seen]:
        with self._lock:
            return list(self._seen)


def sample_posts() -> list[Post]:
    """Five posts, newest first; some lack an author or a date."""
    return [
        Post(5, "Five", "ana", "2026-01-05T10:00:00Z"),
        Post(4, "Four", None, "2026-01-04T10:00:00Z"),
        Post(3, "Three", "bo", None),
        Post(2, "Two", None, None),
        Post(1, "One", "ana", "2026-01-01T10:00:00Z"),
    ]


class ListingSite:
    """The running site: `with ListingSite() as site: site.url("/news/1.html")`."""

    def __init__(self, posts: list[Post] | None = None) -> None:
        self._server = _Server(sample_posts() if posts is None else posts)
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    def __enter__(self) -> ListingSite:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=10)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def url(self, path: str) -> str:
        return self.base_url + path

    def publish(self, post: Post) -> None:
        """A new post, first on every listing: the first pages change, and their ETags."""
        self._server.publish(post)

    def fail(self, path: str, failing: bool = True) -> None:
        """Answer `path` (without its query string) with a 500, or no longer."""
        if failing:
            self._server.failing.add(path)
        else:
            self._server.failing.discard(path)

    def now(self) -> float:
        """The site's clock, the one each request's `at` reads."""
        return time.monotonic()

    def requests_to(self, path: str) -> list[Seen]:
        """The requests received for `path` (with its query string, if any), oldest first."""
        return [seen for seen in self._server.seen() if seen.path == path]


def main() -> None:
    """Serve until interrupted; the first line printed is the URL (the integration convention)."""
    with ListingSite() as site:
        print(site.base_url, flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            threading.Event().wait()


if __name__ == "__main__":
    main()
