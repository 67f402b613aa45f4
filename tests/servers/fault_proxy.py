"""Fault-injection proxy: relays HTTP between hub and node on 127.0.0.1 and loses, delays,
duplicates, cuts or hangs chosen requests, or blackholes everything (a partition), for tests.

It only forwards to loopback upstreams and reads one request at a time per connection
(keep-alive works); it does not speak TLS, CONNECT or chunked request bodies.
"""

from __future__ import annotations

import collections
import contextlib
import http.client
import ipaddress
import logging
import socket
import socketserver
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from urllib.parse import urlsplit

logger = logging.getLogger(__name__)

FAULTS = ("drop_request", "drop_response", "delay", "duplicate", "cut", "hang")
UPSTREAM_TIMEOUT = 30.0  # seconds per socket operation towards the upstream
CLOSE_JOIN_AFTER = 1.5  # close() waits at most this long for connection threads
IDLE_CONNECTION_AFTER = 300.0  # a silent client cannot pin a thread beyond this, even unclosed
# Hop-by-hop headers (RFC 9110 7.6.1), and those the proxy writes itself for its own hop.
HOP_BY_HOP = {"connection", "keep-alive", "proxy-connection", "te", "trailer", "upgrade"}
NOT_RELAYED = frozenset({*HOP_BY_HOP, "transfer-encoding", "expect", "host", "content-length"})


@dataclass
class _Rule:
    fault: str
    method: str | None
    path: str
    remaining: int | None  # None: until clear()
    seconds: float

    def matches(self, method: str, target: str) -> bool:
        return (self.method is None or self.method == method) and target.startswith(self.path)


@dataclass(frozen=True)
class _Upstream:
    host: str
    port: int
    netloc: str
    prefix: str


@dataclass(frozen=True)
class _Answer:
    status: int
    reason: str
    headers: list[tuple[str, str]]
    body: bytes


BAD_GATEWAY = _Answer(502, "Bad Gateway", [("Content-Type", "text/plain")], b"bad gateway")


def _parse_upstream(url: str) -> _Upstream:
    """Loopback only: a test proxy must never become a way out of the machine."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    try:
        loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    if parts.scheme != "http" or not loopback:
        raise ValueError(f"upstream must be a loopback http URL, got {url!r}")
    netloc = parts.netloc.rpartition("@")[2]
    return _Upstream(host, parts.port or 80, netloc, parts.path.rstrip("/"))


class _Handler(BaseHTTPRequestHandler):
    """One client connection: parse each request, consult the proxy, relay or misbehave."""

    server: _Server
    protocol_version = "HTTP/1.1"  # keep-alive, as `requests` expects
    timeout = IDLE_CONNECTION_AFTER

    def _relay(self) -> None:
        with contextlib.suppress(BrokenPipeError, ConnectionResetError, TimeoutError):
            length = self._body_length()
            if length is None:
                return
            body = self.rfile.read(length) if "Content-Length" in self.headers else None
            if body is not None and len(body) < length:
                self.close_connection = True  # the client hung up mid-body: nothing to relay
                return
            answer = self.server.proxy._exchange(self.command, self.path, self.headers, body)
            if answer is None:
                self.close_connection = True  # dropped or held: hang up without a word
            else:
                self._answer(answer[0], answer[1])
                if answer[1] == "hang":  # half an answer, then silence on an open connection
                    self.wfile.flush()
                    self.server.proxy.wait_unless_closing(answer[2])

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = _relay

    def _body_length(self) -> int | None:
        if "Transfer-Encoding" in self.headers:
            self.send_error(411, "chunked request bodies are not supported by the fault proxy")
            return None
        try:
            length = int(self.headers.get("Content-Length", "0"))
        except ValueError:
            length = -1
        if length < 0:
            self.send_error(400, "bad Content-Length")
            return None
        return length

    def _answer(self, answer: _Answer, fault: str) -> None:
        """Relay the upstream's answer; a cut (or hanging) one announces its full length but
        stops halfway."""
        cut = fault in ("cut", "hang")
        bodiless = self.command == "HEAD" or answer.status in (204, 304) or answer.status < 200
        if cut and (bodiless or not answer.body):
            self.close_connection = True  # nothing to cut short but the status line itself
            self.wfile.write(f"HTTP/1.1 {answer.status} {answer.reason}"[:10].encode())
            return
        self.send_response_only(answer.status, answer.reason)
        for name, value in answer.headers:
            lowered = name.lower()
            if lowered not in NOT_RELAYED or (
                lowered == "content-length" and self.command == "HEAD"
            ):
                self.send_header(name, value)
        if not bodiless:
            self.send_header("Content-Length", str(len(answer.body)))
        if cut or self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        if not bodiless:
            self.wfile.write(answer.body[: len(answer.body) // 2] if cut else answer.body)

    def log_message(self, format: str, *args: object) -> None:
        """Quiet: test output is for the tests."""


class _Server(socketserver.TCPServer):
    """Accepts on 127.0.0.1:0; one daemon thread per connection, each tracked so close() can
    wake it (shutting its socket down) and join it within a deadline."""

    request_queue_size = 64

    def __init__(self, proxy: FaultProxy) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.proxy = proxy
        self._lock = threading.Lock()
        self._connections: dict[socket.socket, threading.Thread] = {}

    def process_request(self, request: socket.socket, client_address: object) -> None:  # type: ignore[override]
        thread = threading.Thread(
            target=self._serve_connection, args=(request, client_address), daemon=True
        )
        with self._lock:
            self._connections[request] = thread
        thread.start()

    def _serve_connection(self, request: socket.socket, client_address: object) -> None:
        try:
            self.finish_request(request, client_address)
        except Exception:
            self.handle_error(request, client_address)
        finally:
            self.shutdown_request(request)

    def shutdown_request(self, request: socket.socket) -> None:  # type: ignore[override]
        with self._lock:  # never shut down a socket whose descriptor was just reused
            self._connections.pop(request, None)
            super().shutdown_request(request)

    def hang_up_all(self) -> list[threading.Thread]:
        """Wake every connection thread blocked on its client; return them for joining."""
        with self._lock:
            for request in self._connections:
                with contextlib.suppress(OSError):
                    request.shutdown(socket.SHUT_RDWR)
            return list(self._connections.values())

    def handle_error(self, request: object, client_address: object) -> None:
        """Hung-up clients are handled in the handler; anything reaching here is a proxy bug."""
        logger.exception("fault proxy connection failed client=%s", client_address)


class FaultProxy:
    """The running proxy: `with FaultProxy(node_url) as proxy: proxy.add("drop_response")`.

    Point the hub (or node) at `proxy.url` instead of the real address. Rules are matched in
    the order added and one rule applies per request; a partition overrides every rule.
    """

    def __init__(self, upstream: str | None = None) -> None:
        self._lock = threading.Lock()
        self._rules: list[_Rule] = []
        self._held: threading.Event | None = None  # set while partitioned; set() releases
        self._closing = threading.Event()
        self._upstream_connections: set[http.client.HTTPConnection] = set()
        self._upstream: tuple[str | None, _Upstream | None] = (None, None)
        self.upstream = upstream  # validated before anything is bound
        self.injected: collections.Counter[str] = collections.Counter()
        self.forwarded = 0
        self._server = _Server(self)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()

    @property
    def upstream(self) -> str | None:
        return self._upstream[0]

    @upstream.setter
    def upstream(self, url: str | None) -> None:
        self._upstream = (url, None if url is None else _parse_upstream(url))

    def add(
        self,
        fault: str,
        method: str | None = None,
        path: str = "",
        times: int | None = 1,
        seconds: float = 0.0,
    ) -> None:
        """Inject `fault` into the next `times` requests (None: every one until clear()) whose
        method matches (None: any) and whose path starts with `path`."""
        if fault not in FAULTS:
            raise ValueError(f"unknown fault {fault!r}; one of {', '.join(FAULTS)}")
        if times is not None and times < 1:
            raise ValueError(f"times must be at least 1 or None, got {times}")
        if seconds < 0:
            raise ValueError(f"seconds must not be negative, got {seconds}")
        rule = _Rule(fault, method.upper() if method else None, path, times, seconds)
        with self._lock:
            self._rules.append(rule)

    def rules_left(self) -> int:
        """Rules not yet used up: 0 once every injected fault has happened."""
        with self._lock:
            return len(self._rules)

    def clear(self) -> None:
        """Remove every rule; a partition stays until heal()."""
        with self._lock:
            self._rules.clear()

    def partition(self) -> None:
        """Blackhole from now on: requests are read and held unanswered, nothing is forwarded."""
        with self._lock:
            if self._held is None and not self._closing.is_set():
                self._held = threading.Event()
        logger.debug("fault proxy partitioned url=%s", self.url)

    def heal(self) -> None:
        """End the partition; held connections are closed unanswered, as after a lost packet."""
        with self._lock:
            held, self._held = self._held, None
        if held is not None:
            held.set()
        logger.debug("fault proxy healed url=%s", self.url)

    def close(self) -> None:
        """Stop serving and release every held, idle or forwarding connection, promptly."""
        with self._lock:
            if self._closing.is_set():
                return
            self._closing.set()
            for connection in self._upstream_connections:
                if connection.sock is not None:
                    with contextlib.suppress(OSError):
                        connection.sock.shutdown(socket.SHUT_RDWR)
        self.heal()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=CLOSE_JOIN_AFTER)
        deadline = time.monotonic() + CLOSE_JOIN_AFTER
        for thread in self._server.hang_up_all():
            thread.join(timeout=max(0.0, deadline - time.monotonic()))

    def __enter__(self) -> FaultProxy:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _exchange(
        self, method: str, target: str, headers: http.client.HTTPMessage, body: bytes | None
    ) -> tuple[_Answer, str, float] | None:
        """Decide one request's fate: None means the client gets no answer at all, else the
        answer to relay with the fault to apply to it ("cut", "hang" or none) and its seconds."""
        if self._hold():
            return None
        rule = self._match(method, target)
        fault, seconds = (rule.fault, rule.seconds) if rule else ("", 0.0)
        if fault == "drop_request":
            return None
        if fault == "delay" and (self._closing.wait(seconds) or self._hold()):
            return None
        answer = self._forward(method, target, headers, body)
        if fault == "duplicate":
            answer = self._forward(method, target, headers, body)
        if self._hold() or fault == "drop_response":
            return None
        return answer, fault if fault in ("cut", "hang") else "", seconds

    def wait_unless_closing(self, seconds: float) -> None:
        """A hanging answer stays silent this long, or until the proxy closes."""
        self._closing.wait(seconds)

    def _match(self, method: str, target: str) -> _Rule | None:
        """The first matching rule, with one of its uses spent and the injection counted."""
        with self._lock:
            for rule in self._rules:
                if rule.matches(method, target):
                    if rule.remaining is not None:
                        rule.remaining -= 1
                        if rule.remaining == 0:
                            self._rules.remove(rule)
                    self.injected[rule.fault] += 1
                    logger.debug("fault injected fault=%s %s %s", rule.fault, method, target)
                    return rule
        return None

    def _hold(self) -> bool:
        """While partitioned, keep the request unanswered until heal() or close()."""
        with self._lock:
            held = self._held
            if held is None:
                return False
            self.injected["partition"] += 1
        held.wait()
        return True

    def _forward(
        self, method: str, target: str, headers: http.client.HTTPMessage, body: bytes | None
    ) -> _Answer:
        """One request to the upstream on a fresh connection; any failure is a 502."""
        upstream = self._upstream[1]
        if upstream is None or self._closing.is_set():
            return BAD_GATEWAY
        connection = http.client.HTTPConnection(
            upstream.host, upstream.port, timeout=UPSTREAM_TIMEOUT
        )
        with self._lock:
            self._upstream_connections.add(connection)
        try:
            connection.putrequest(
                method, upstream.prefix + target, skip_host=True, skip_accept_encoding=True
            )
            connection.putheader("Host", upstream.netloc)
            for name, value in headers.items():
                if name.lower() not in NOT_RELAYED:
                    connection.putheader(name, value)
            if body is not None:
                connection.putheader("Content-Length", str(len(body)))
            connection.endheaders(body)
            with self._lock:
                self.forwarded += 1
            response = connection.getresponse()
            return _Answer(response.status, response.reason, response.getheaders(), response.read())
        except (OSError, http.client.HTTPException) as error:
            logger.debug("fault proxy upstream failed upstream=%s error=%s", upstream.netloc, error)
            return BAD_GATEWAY
        finally:
            with self._lock:
                self._upstream_connections.discard(connection)
                connection.close()
