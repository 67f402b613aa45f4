"""The streaming half of the fake paid services: a threaded HTTP server whose handlers hold
long-lived chunked streams, one per key at a time, as X and metered providers allow.

fake_x and fake_paid_stream build on it; tests never use it directly.
"""

from __future__ import annotations

import collections
import contextlib
import json
import select
import socket
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, NamedTuple, Self
from urllib.parse import parse_qs, urlsplit

STREAM_CAP = 600.0  # seconds: a stream ends by itself after this, so nothing runs for ever
IDLE_CHECK = 0.05  # an idle stream looks this often for a client that went away
CLOSE_WAIT = 2.0  # close() waits at most this long for streams to end
HANDLER_TIMEOUT = 10.0  # a client that stops reading cannot pin a handler thread for ever


class Reply(NamedTuple):
    """A complete (non-streaming) answer."""

    status: int
    body: Any
    headers: dict[str, str] = {}


class Refusal(NamedTuple):
    """Why a stream connection was not accepted: a queued failure, or one stream too many."""

    status: int
    too_many: bool


@dataclass(eq=False)
class OpenStream:
    """One open streaming response: publishers queue lines, its handler thread writes them."""

    key: str  # what connections are limited by: X's app token, the paid stream's query
    sock: socket.socket
    options: dict[str, Any]
    pending: collections.deque[bytes] = field(default_factory=collections.deque)
    wakeup: threading.Event = field(default_factory=threading.Event)
    thread: threading.Thread = field(default_factory=threading.current_thread)
    dropped: bool = False

    def send(self, line: bytes) -> None:
        self.pending.append(line)
        self.wakeup.set()


def _client_gone(sock: socket.socket) -> bool:
    """True once the client has hung up: the socket reads as end-of-file, or fails."""
    try:
        readable, _, _ = select.select([sock], [], [], 0)
        return bool(readable) and sock.recv(1, socket.MSG_PEEK) == b""
    except (OSError, ValueError):
        return True


class _HTTPServer(ThreadingHTTPServer):
    """Daemon handler threads; every connection's socket is tracked so close() can hang up."""

    daemon_threads = True
    request_queue_size = 64

    def __init__(self, fake: StreamingFake, handler: type[StreamHandler]) -> None:
        super().__init__(("127.0.0.1", 0), handler)
        self.fake = fake
        self._lock = threading.Lock()
        self._sockets: set[socket.socket] = set()

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._lock:
            self._sockets.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self._lock:  # never shut down a socket whose descriptor was just reused
            self._sockets.discard(request)
            super().shutdown_request(request)

    def hang_up_all(self) -> None:
        with self._lock:
            for request in self._sockets:
                with contextlib.suppress(OSError):
                    request.shutdown(socket.SHUT_RDWR)

    def handle_error(self, request: object, client_address: object) -> None:
        """Quiet: clients hanging up are expected; a real failure shows up in the tests."""


class StreamHandler(BaseHTTPRequestHandler):
    """HTTP/1.1 with keep-alive; JSON answers, and chunked streams written by hand."""

    server: _HTTPServer
    protocol_version = "HTTP/1.1"
    timeout = HANDLER_TIMEOUT

    def log_message(self, format: str, *args: object) -> None:
        """Quiet: test output is for the tests."""

    def params(self) -> dict[str, str]:
        return {name: values[0] for name, values in parse_qs(urlsplit(self.path).query).items()}

    def read_body(self) -> bytes:
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def reply(self, reply: Reply) -> None:
        payload = json.dumps(reply.body).encode()
        self.send_response(reply.status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        for name, value in reply.headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(payload)

    def serve_stream(self, stream: OpenStream, content_type: str, keepalive_line: bytes) -> None:
        """Write the stream's lines as they come, a keep-alive line when idle, until the client
        goes, the stream is dropped, the server closes or the cap is reached."""
        fake = self.server.fake
        self.close_connection = True
        try:
            self.send_response(200)
            self.send_header("Content-Type", content_type)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            self._pump(stream, keepalive_line)
        finally:
            fake._release(stream)

    def _pump(self, stream: OpenStream, keepalive_line: bytes) -> None:
        fake = self.server.fake
        deadline = time.monotonic() + STREAM_CAP
        last_write = time.monotonic()
        while not (stream.dropped or fake.closing.is_set()) and time.monotonic() < deadline:
            stream.wakeup.clear()
            while stream.pending:
                self._line(stream, stream.pending.popleft())
                last_write = time.monotonic()
            if time.monotonic() - last_write >= fake.keepalive:
                self._chunk(keepalive_line)
                last_write = time.monotonic()
            if _client_gone(self.connection):
                return
            next_keepalive = last_write + fake.keepalive - time.monotonic()
            stream.wakeup.wait(max(0.0, min(IDLE_CHECK, next_keepalive)))
        if not stream.dropped:
            self.wfile.write(b"0\r\n\r\n")  # a clean end: the server closes, or the cap

    def _line(self, stream: OpenStream, line: bytes) -> None:
        """Counted before it is written, so a client never reads a line not yet counted."""
        fake = self.server.fake
        fake._written(stream, 1)
        try:
            self._chunk(line)
        except OSError:
            fake._written(stream, -1)  # never fully sent
            raise

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(b"%X\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()


class StreamingFake:
    """A fake service running in a thread: `with Fake() as fake: fake.url`.

    Streams are keyed (by token, by query) and each key may have one open stream at a time,
    as the paid services allow. A stream whose client went away still counts for `linger`
    seconds, as a service that notices a vanished client only when its keep-alives fail.
    Every public method is thread-safe.
    """

    handler: type[StreamHandler]

    def __init__(self, keepalive: float, linger: float = 0.0) -> None:
        self.keepalive = keepalive
        self.linger = linger
        self._lingering: list[tuple[str, float]] = []  # (key, counted until time.monotonic())
        self.closing = threading.Event()
        self._lock = threading.RLock()
        self._streams: list[OpenStream] = []
        self._failures: collections.deque[int] = collections.deque()
        self._lines: collections.Counter[str] = collections.Counter()
        self._connect_times: list[tuple[float, int]] = []
        self.connections_accepted = 0
        self.connections_refused = 0
        self.max_open_streams = 0
        self._server = _HTTPServer(self, self.handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop serving: open streams end cleanly, idle connections are hung up."""
        self.closing.set()
        with self._lock:
            streams = list(self._streams)
        for stream in streams:
            stream.wakeup.set()
        if self._thread.is_alive():
            self._server.shutdown()
        self._server.server_close()
        deadline = time.monotonic() + CLOSE_WAIT
        for stream in streams:
            stream.thread.join(timeout=max(0.0, deadline - time.monotonic()))
        self._server.hang_up_all()
        self._thread.join(timeout=CLOSE_WAIT)

    @property
    def port(self) -> int:
        return self._server.server_address[1]

    @property
    def connect_times(self) -> list[tuple[float, int]]:
        """(time.monotonic(), status) of every stream connection attempt, oldest first."""
        with self._lock:
            return list(self._connect_times)

    def open_streams(self, key: str | None = None) -> int:
        with self._lock:
            return sum(1 for stream in self._streams if key is None or stream.key == key)

    def lingering(self, key: str | None = None) -> int:
        """Streams of `key`, or of every key, whose client left but which still count."""
        with self._lock:
            now = time.monotonic()
            return sum(1 for k, until in self._lingering if (key in (None, k)) and until > now)

    def release_lingering(self) -> None:
        """Stop counting the streams whose client left, as the service does when it notices."""
        with self._lock:
            self._lingering.clear()

    def fail_next_connects(self, n: int, status: int = 429) -> None:
        """Refuse the next `n` stream connections (that would otherwise open) with `status`."""
        with self._lock:
            self._failures.extend([status] * n)

    def drop_streams(self) -> None:
        """Cut every open stream abruptly, mid-stream, as the service sometimes does."""
        with self._lock:
            for stream in self._streams:
                stream.dropped = True
                with contextlib.suppress(OSError):
                    stream.sock.shutdown(socket.SHUT_RDWR)
                stream.wakeup.set()
            self._streams.clear()

    def _refuse(self, status: int) -> None:
        with self._lock:
            self.connections_refused += 1
            self._connect_times.append((time.monotonic(), status))

    def _admit(
        self, key: str, sock: socket.socket, options: dict[str, Any]
    ) -> OpenStream | Refusal:
        with self._lock:
            if self.open_streams(key) or self.lingering(key):
                refusal = Refusal(429, too_many=True)
            elif self._failures:
                refusal = Refusal(self._failures.popleft(), too_many=False)
            else:
                stream = OpenStream(key, sock, options)
                self._streams.append(stream)
                self.connections_accepted += 1
                self.max_open_streams = max(self.max_open_streams, self.open_streams(key))
                self._connect_times.append((time.monotonic(), 200))
                return stream
            self._refuse(refusal.status)
            return refusal

    def _release(self, stream: OpenStream) -> None:
        """The stream ended. Its client left, unless the service dropped it or is closing: then
        the stream still counts for `linger` seconds."""
        with self._lock:
            if stream in self._streams:
                self._streams.remove(stream)
            if self.linger > 0 and not (stream.dropped or self.closing.is_set()):
                self._lingering.append((stream.key, time.monotonic() + self.linger))

    def _written(self, stream: OpenStream, count: int) -> None:
        with self._lock:
            self._lines[stream.key] += count

    def _open(self) -> list[OpenStream]:
        with self._lock:
            return list(self._streams)
