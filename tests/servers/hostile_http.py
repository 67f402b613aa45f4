"""Hostile HTTP server: a catalogue of misbehaving feed endpoints on 127.0.0.1, port 0, for tests.

Stands in for the remote feed servers a node fetches from. Use it as a context manager (it
runs in a thread) or run it as a module, which prints its URL as the first line.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import re
import threading
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime, parsedate_to_datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

DATA_DIR = Path(__file__).resolve().parent.parent / "data"
HUGE_BYTES = 6 * 1024 * 1024  # more than the fetcher's default 5 MiB cap
BOMB_DECODED_BYTES = 64 * 1024 * 1024
TRICKLE_INTERVAL = 0.2
TRICKLE_LIMIT = 30.0  # the trickle gives up by itself, so the server always shuts down

# ill-formed and no feed: feedparser's lenient reading finds no feed in it
INVALID_XML = b'<?xml version="1.0"?>\n<html><body><p>Moved to <a href="/new">here</body>'
BILLION_LAUGHS = b"""<?xml version="1.0"?>
<!DOCTYPE rss [
  <!ENTITY lol "lol">
  <!ENTITY lol1 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
  <!ENTITY lol2 "&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;">
  <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
  <!ENTITY lol4 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
  <!ENTITY lol5 "&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;">
  <!ENTITY lol6 "&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;">
  <!ENTITY lol7 "&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;">
  <!ENTITY lol8 "&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;">
  <!ENTITY lol9 "&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;">
]>
<rss version="2.0"><channel><title>&lol9;</title>
<item><guid>laugh-1</guid><title>&lol9;</title></item></channel></rss>
"""
EXTERNAL_ENTITY = b"""<?xml version="1.0"?>
<!DOCTYPE rss [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>
<rss version="2.0"><channel><title>leak</title>
<item><guid>leak-1</guid><title>&xxe;</title></item></channel></rss>
"""


@functools.cache
def gzip_bomb() -> bytes:
    """About 64 KB of gzip that inflates to 64 MiB of zeros; built in slices to stay small here."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, 31)
    zeros = bytes(1024 * 1024)
    parts = [compressor.compress(zeros) for _ in range(BOMB_DECODED_BYTES // len(zeros))]
    return b"".join(parts) + compressor.flush()


@dataclass
class FeedDocument:
    """A feed served with ETag and Last-Modified; tests add entries between polls."""

    kind: str  # "rss" or "atom"
    entries: list[tuple[str, str]] = field(default_factory=list)  # (id, title)
    modified_at: datetime = datetime(2024, 1, 1, tzinfo=UTC)

    def add(self, entry_id: str, title: str) -> None:
        """Add an entry; the document changes, so its validators change too."""
        self.entries.append((entry_id, title))
        self.modified_at += timedelta(seconds=1)

    def body(self, base_url: str) -> bytes:
        render = _atom_entry if self.kind == "atom" else _rss_item
        items = "".join(render(base_url, entry_id, title) for entry_id, title in self.entries)
        if self.kind == "atom":
            return (
                '<?xml version="1.0"?><feed xmlns="http://www.w3.org/2005/Atom">'
                f"<title>hostile atom</title><id>urn:hostile</id>"
                f"<updated>2024-01-01T00:00:00Z</updated>{items}</feed>"
            ).encode()
        return (
            '<?xml version="1.0"?><rss version="2.0"><channel><title>hostile rss</title>'
            f"<link>{base_url}/</link><description>d</description>{items}</channel></rss>"
        ).encode()

    def etag(self, base_url: str) -> str:
        return '"' + hashlib.sha1(self.body(base_url)).hexdigest()[:16] + '"'

    def not_modified(self, base_url: str, if_none_match: str | None, since: str | None) -> bool:
        """RFC 9110: If-None-Match wins; If-Modified-Since counts only without it."""
        if if_none_match is not None:
            tags = {tag.strip() for tag in if_none_match.split(",")}
            return "*" in tags or self.etag(base_url) in tags
        if since is None:
            return False
        try:
            return self.modified_at <= parsedate_to_datetime(since)
        except (TypeError, ValueError):
            return False


def _rss_item(base_url: str, entry_id: str, title: str) -> str:
    return (
        f"<item><guid>{entry_id}</guid><title>{title}</title>"
        f"<link>{base_url}/items/{entry_id}</link><description>about {title}</description>"
        "<pubDate>Mon, 01 Jan 2024 12:00:00 GMT</pubDate></item>"
    )


def _atom_entry(base_url: str, entry_id: str, title: str) -> str:
    return (
        f"<entry><id>{entry_id}</id><title>{title}</title>"
        f'<link href="{base_url}/items/{entry_id}"/><summary>about {title}</summary>'
        "<updated>2024-01-01T12:00:00Z</updated></entry>"
    )


@dataclass(frozen=True)
class SeenRequest:
    path: str
    headers: dict[str, str]


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    timeout = 10  # a client that stops reading cannot pin a handler thread for ever

    def do_GET(self) -> None:
        path = urlsplit(self.path).path
        self.server.record(SeenRequest(path, dict(self.headers.items())))
        route = ROUTES.get(path)
        if route is None and re.fullmatch(r"/data/[\w.-]+\.xml", path):
            route = _Handler._data_file
        # The fetcher hanging up mid-body is the behaviour under test, not a server error.
        with contextlib.suppress(BrokenPipeError, ConnectionResetError, TimeoutError):
            (route or _Handler._not_found)(self)

    def log_message(self, format: str, *args: object) -> None:
        """Quiet: test output is for the tests."""

    def _send(self, status: int, body: bytes = b"", headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        for name, value in {"Content-Length": str(len(body)), **(headers or {})}.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def _xml(self, body: bytes) -> None:
        self._send(200, body, {"Content-Type": "application/xml"})

    def _not_found(self) -> None:
        self._send(404, b"not found")

    def _redirect(self, location: str) -> None:
        self._send(302, headers={"Location": location})

    def _query(self, name: str) -> str:
        return parse_qs(urlsplit(self.path).query).get(name, [""])[0]

    def _feed(self, document: FeedDocument) -> None:
        base = self.server.base_url
        validators = {
            "ETag": document.etag(base),
            "Last-Modified": format_datetime(document.modified_at, usegmt=True),
        }
        inm, since = self.headers.get("If-None-Match"), self.headers.get("If-Modified-Since")
        if document.not_modified(base, inm, since):
            self.send_response(304)
            for name, value in validators.items():
                self.send_header(name, value)
            self.end_headers()
            return
        self._send(200, document.body(base), {"Content-Type": "application/xml", **validators})

    def _huge(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", str(HUGE_BYTES))
        self.end_headers()
        chunk = b"x" * 65536
        for _ in range(HUGE_BYTES // len(chunk)):
            self.wfile.write(chunk)

    def _trickle(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/xml")
        self.end_headers()
        for _ in range(int(TRICKLE_LIMIT / TRICKLE_INTERVAL)):
            self.wfile.write(b" ")
            self.wfile.flush()
            if self.server.closing.wait(TRICKLE_INTERVAL):
                return

    def _data_file(self) -> None:
        name = urlsplit(self.path).path.removeprefix("/data/")
        path = DATA_DIR / name
        if path.is_file():
            self._xml(path.read_bytes())
        else:
            self._not_found()


ROUTES: dict[str, Callable[[_Handler], None]] = {
    "/rss": lambda h: h._feed(h.server.rss),
    "/atom": lambda h: h._feed(h.server.atom),
    "/redirect": lambda h: h._redirect(h._query("to")),
    "/redirect-loop": lambda h: h._redirect("/redirect-loop"),
    "/relative-redirect": lambda h: h._redirect("rss"),
    "/huge": _Handler._huge,
    "/gzip-bomb": lambda h: h._send(200, gzip_bomb(), {"Content-Encoding": "gzip"}),
    "/trickle": _Handler._trickle,
    "/invalid-xml": lambda h: h._xml(INVALID_XML),
    "/billion-laughs": lambda h: h._xml(BILLION_LAUGHS),
    "/external-entity": lambda h: h._xml(EXTERNAL_ENTITY),
    "/error-500": lambda h: h._send(500, b"internal error"),
    "/too-many": lambda h: h._send(429, b"slow down", {"Retry-After": "3600"}),
    "/unavailable": lambda h: h._send(503, b"back soon", {"Retry-After": "900"}),
    "/cached": lambda h: h._send(
        200, h.server.rss.body(h.server.base_url), {"Cache-Control": "public, max-age=600"}
    ),
}


class _Server(ThreadingHTTPServer):
    daemon_threads = False  # server_close joins every handler: a clean, bounded shutdown
    block_on_close = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.base_url = f"http://127.0.0.1:{self.server_address[1]}"
        self.closing = threading.Event()
        self.rss = FeedDocument("rss", [("rss-1", "first"), ("rss-2", "second")])
        self.atom = FeedDocument("atom", [("urn:atom:1", "first"), ("urn:atom:2", "second")])
        self._seen: list[SeenRequest] = []
        self._seen_lock = threading.Lock()

    def record(self, request: SeenRequest) -> None:
        with self._seen_lock:
            self._seen.append(request)

    def requests_to(self, path: str) -> list[SeenRequest]:
        with self._seen_lock:
            return [seen for seen in self._seen if seen.path == path]

    def handle_error(self, request: object, client_address: object) -> None:
        """Quiet: hostile clients are the point; a failing handler shows up in the tests."""


class HostileServer:
    """The running server: `with HostileServer() as server: server.url("/rss")`."""

    def __init__(self) -> None:
        self._server = _Server()
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    def __enter__(self) -> HostileServer:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._server.closing.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=TRICKLE_LIMIT)

    @property
    def port(self) -> int:
        return self._server.server_address[1]

    @property
    def base_url(self) -> str:
        return self._server.base_url

    @property
    def rss(self) -> FeedDocument:
        return self._server.rss

    @property
    def atom(self) -> FeedDocument:
        return self._server.atom

    def url(self, path: str) -> str:
        return self.base_url + path

    def requests_to(self, path: str) -> list[SeenRequest]:
        """The requests the server received for `path`, oldest first."""
        return self._server.requests_to(path)


def main() -> None:
    """Serve until interrupted; the first line printed is the URL (the integration convention)."""
    with HostileServer() as server:
        print(server.base_url, flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            threading.Event().wait()


if __name__ == "__main__":
    main()
