"""Fake metered stream (the "datasift" source) on 127.0.0.1, port 0, for tests.

Stands in for a paid service that streams the items matching a query as JSON lines and bills
every item it delivers, so tests can count what a client would have paid for. The wire format:
`GET <any path>?q=<query>` with the secret in an auth header answers 200,
`application/x-ndjson`, chunked, one JSON object per line ending in "\\n" and an empty line as a
keep-alive when idle; one open connection per query (a second one is refused with 429). Use it
as a context manager (it runs in a thread) or run it as a module, which prints its URL as the
first line.
"""

from __future__ import annotations

import contextlib
import hmac
import itertools
import json
import socket
import threading
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from tests.servers.streaming import OpenStream, Reply, StreamHandler, StreamingFake

ITEM_URL = "https://example.com/items/"


class _Handler(StreamHandler):
    def do_GET(self) -> None:
        # A client hanging up is what some tests are about, not a server error.
        with contextlib.suppress(BrokenPipeError, ConnectionResetError, TimeoutError):
            fake: FakePaidStream = self.server.fake  # type: ignore[assignment]
            query = self.params().get(fake.param)
            secret = self.headers.get(fake.header, "")
            if not hmac.compare_digest(secret.encode(), fake.secret.encode()):
                fake._refuse(401)
                self.reply(Reply(401, {"error": "unauthorized"}))
            elif not query:
                fake._refuse(400)
                self.reply(Reply(400, {"error": f"missing query parameter {fake.param!r}"}))
            else:
                outcome = fake._connect(query, self.connection)
                if isinstance(outcome, Reply):
                    self.reply(outcome)
                else:
                    self.serve_stream(outcome, "application/x-ndjson", b"\n")


class FakePaidStream(StreamingFake):
    """The fake metered stream: `with FakePaidStream() as paid: paid.publish("cats", "meow")`.

    Items published for a query go to that query's open stream only, and are not replayed to a
    later connection; `delivered(query)` counts the item lines written, what would be billed.
    """

    handler = _Handler

    def __init__(
        self,
        secret: str = "paid-secret",
        header: str = "Authorization",
        param: str = "q",
        keepalive: float = 0.2,
    ) -> None:
        self.secret = secret
        self.header = header
        self.param = param
        self._ids = itertools.count(1)
        super().__init__(keepalive)

    def publish(
        self,
        query: str,
        text: str,
        author: str = "bob",
        url: str | None = None,
        title: str | None = None,
        conversation_id: str | None = None,
        in_reply_to: str | None = None,
    ) -> str:
        """Emit one item for `query` now; returns its id."""
        item = self._item(text, author, url, title, conversation_id, in_reply_to)
        with self._lock:
            self._send(query, [item])
        return item["id"]

    def publish_many(self, query: str, texts: Iterable[str], author: str = "bob") -> list[str]:
        """Emit a burst of items for `query`, in order; returns their ids."""
        with self._lock:
            items = [self._item(text, author, None, None, None, None) for text in texts]
            self._send(query, items)
        return [item["id"] for item in items]

    def open_streams(self, query: str | None = None) -> int:
        """Open stream connections for `query`, or for every query."""
        return super().open_streams(query)

    def delivered(self, query: str) -> int:
        """Item lines written to `query`'s streams so far: what the service would bill."""
        with self._lock:
            return self._lines[query]

    def _item(
        self,
        text: str,
        author: str,
        url: str | None,
        title: str | None,
        conversation_id: str | None,
        in_reply_to: str | None,
    ) -> dict[str, Any]:
        with self._lock:
            item_id = f"paid-{next(self._ids)}"
        return {
            "id": item_id,
            "text": text,
            "author": author,
            "url": url or ITEM_URL + item_id,
            "title": title,
            "created_at": datetime.now(UTC).isoformat(timespec="milliseconds"),
            "conversation_id": conversation_id,
            "in_reply_to": in_reply_to,
        }

    def _send(self, query: str, items: list[dict[str, Any]]) -> None:
        for stream in self._open():
            if stream.key == query:
                for item in items:
                    stream.send(json.dumps(item).encode() + b"\n")

    def _connect(self, query: str, sock: socket.socket) -> OpenStream | Reply:
        outcome = self._admit(query, sock, {})
        if isinstance(outcome, OpenStream):
            return outcome
        if outcome.too_many:
            return Reply(429, {"error": "too many connections"})
        if outcome.status == 429:
            return Reply(429, {"error": "rate limited"}, {"Retry-After": "1"})
        return Reply(outcome.status, {"error": f"failed with status {outcome.status}"})


def main() -> None:
    """Serve until interrupted; the first line printed is the URL (the integration convention)."""
    with FakePaidStream() as fake:
        print(fake.url, flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            threading.Event().wait()


if __name__ == "__main__":
    main()
