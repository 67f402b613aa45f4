"""Stand-in for the sites of the real-feed corpus (tests/data/feeds/real): serves each file with
the Content-Type its manifest gives (and an ETag), and says what feedparser alone reads of each."""

from __future__ import annotations

import hashlib
import io
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import feedparser

from sources.rss.fast_reader import fast_read
from sources.rss.feed_guard import decoded
from sources.rss.parse import content_type
from sources.rss.parser_choice import takes_fast_path

REAL = Path(__file__).resolve().parent.parent / "data" / "feeds" / "real"
MANIFEST: dict[str, str] = json.loads((REAL / "manifest.json").read_text())


def feedparser_alone(name: str) -> Any:
    """feedparser by itself, as an application would call it, on a corpus file."""
    body = (REAL / name).read_bytes()
    return feedparser.parse(io.BytesIO(body), response_headers={"content-type": MANIFEST[name]})


def distinct_entries(parsed: Any) -> int:
    """Entries as parse_feed identifies them: by guid, else by link. An entry with neither
    cannot be told apart from the next poll's and is not collected; one listed twice is one
    item. (parse_feed also drops a link that is not http(s) and compares links in canonical
    form; no feed of the corpus is affected, and a count would show it.)"""
    keys = {(entry.get("id") or entry.get("link") or "").strip() for entry in parsed.entries}
    return len(keys - {""})


def read_fast(body: bytes, headers: dict[str, str]) -> bool:
    """Whether parse_feed reads this document with the fast reader (sources.rss.fast_reader)
    rather than feedparser: the rule lets it, and the fast reader does not decline it."""
    utf8 = decoded(body, content_type(headers, body))
    return utf8 is not None and takes_fast_path(utf8) and fast_read(utf8) is not None


class _Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        name = self.path.lstrip("/")
        if name not in MANIFEST:
            self.send_error(404)
            return
        body = (REAL / name).read_bytes()
        etag = f'"{hashlib.sha1(body).hexdigest()}"'  # re-polls cost a 304, not a parse
        if self.headers.get("If-None-Match") == etag:
            self.send_response(304)
            self.end_headers()
            return
        self.send_response(200)
        self.send_header("ETag", etag)
        self.send_header("Content-Type", MANIFEST[name])
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@contextmanager
def corpus_server() -> Iterator[str]:
    """The corpus on a loopback port: its base URL (a file is at `<url>/<name>`)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, name="feed-corpus", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
