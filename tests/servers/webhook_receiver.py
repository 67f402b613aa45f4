"""Webhook receiver: stands in for the services operators point alerts at, on 127.0.0.1, port 0.

Records every POST (path, headers, raw body) and can answer 500 to the first N, to exercise
retries. Use it as a context manager (it runs in a thread) or run it as a module, which
prints its URL as the first line.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Received:
    path: str
    headers: dict[str, str]
    body: bytes

    def event(self) -> dict[str, Any]:
        return json.loads(self.body)


class WebhookReceiver:
    def __init__(self, fail_first: int = 0) -> None:
        self.fail_first = fail_first  # answer 500 to this many requests, then 204
        self.received: list[Received] = []
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length)
                self.send_response(receiver._record(self.path, dict(self.headers), body))
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"

    def _record(self, path: str, headers: dict[str, str], body: bytes) -> int:
        with self._lock:
            self.received.append(Received(path, headers, body))
            if self.fail_first > 0:
                self.fail_first -= 1
                return 500
            return 204

    def events(self, path: str | None = None) -> list[dict[str, Any]]:
        """Every body received (at `path`, when given), parsed, in arrival order."""
        with self._lock:
            return [r.event() for r in self.received if path is None or r.path == path]

    @contextmanager
    def running(self) -> Iterator[WebhookReceiver]:
        thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        thread.start()
        try:
            yield self
        finally:
            self._server.shutdown()
            self._server.server_close()
            thread.join(timeout=5)


if __name__ == "__main__":
    receiver = WebhookReceiver()
    print(receiver.url, flush=True)
    receiver._server.serve_forever()
