"""Many listening sockets, one event loop: a WSGI app per socket, for simulating many nodes.

Waitress can listen on many sockets, but its loop rebuilds a poll set of every socket and
connection on each turn, which at 1,000 listeners doubled the CPU of each request served. Here
asyncio's epoll loop accepts and reads, waitress's own request parser parses, and a few threads
run the WSGI apps (GETs on threads of their own, so no poll waits behind another node's batch
PUT), so a request costs about the same whether one or a thousand sockets listen.

HTTP/1.1 with keep-alive, one request at a time per connection (what `requests` sends).
`close(port)` stops a listener and drops its connections: no answer at all from then on.
"""

from __future__ import annotations

import asyncio
import socket
import sys
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from waitress.adjustments import Adjustments
from waitress.parser import HTTPRequestParser

WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]
Answer = tuple[str, list[tuple[str, str]], bytes]  # status line, headers, body
Serve = Callable[[int, dict[str, Any]], Answer]  # the listener's port and the request

_ADJUSTMENTS = Adjustments()
_HEADERLESS = {"CONTENT_TYPE", "CONTENT_LENGTH"}


def environ_for(request: HTTPRequestParser, port: int) -> dict[str, Any]:
    """The WSGI environ of a parsed request that reached the listener on `port`."""
    environ: dict[str, Any] = {
        "REQUEST_METHOD": request.command.upper(),
        "SCRIPT_NAME": "",
        "PATH_INFO": request.path,
        "QUERY_STRING": request.query,
        "SERVER_NAME": "127.0.0.1",
        "SERVER_PORT": str(port),
        "SERVER_PROTOCOL": f"HTTP/{request.version}",
        "REMOTE_ADDR": "127.0.0.1",
        "wsgi.version": (1, 0),
        "wsgi.url_scheme": "http",
        "wsgi.input": request.get_body_stream(),
        "wsgi.input_terminated": True,
        "wsgi.errors": sys.stderr,
        "wsgi.multithread": True,
        "wsgi.multiprocess": False,
        "wsgi.run_once": False,
    }
    for name, value in request.headers.items():
        environ[name if name in _HEADERLESS else f"HTTP_{name}"] = value
    return environ


def call_app(app: WsgiApp, environ: dict[str, Any]) -> Answer:
    """Run one WSGI call to completion: status line, headers, body."""
    started: dict[str, Any] = {}

    def start_response(status: str, headers: list, exc_info: Any = None) -> None:
        started["status"], started["headers"] = status, headers

    result = app(environ, start_response)
    try:
        body = b"".join(result)
    finally:
        getattr(result, "close", lambda: None)()
    return started["status"], started["headers"], body


def response_bytes(status: str, headers: list, body: bytes, close: bool) -> bytes:
    lines = [f"HTTP/1.1 {status}"]
    lines += [f"{k}: {v}" for k, v in headers if k.lower() not in ("content-length", "connection")]
    lines += [f"Content-Length: {len(body)}", f"Connection: {'close' if close else 'keep-alive'}"]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


class _Connection(asyncio.Protocol):
    def __init__(self, listeners: ManyListeners, port: int) -> None:
        self._listeners = listeners
        self._port = port
        self._parser = HTTPRequestParser(_ADJUSTMENTS)
        self._buffer = b""
        self._busy = False
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        self._listeners.connections.setdefault(self._port, set()).add(self)

    def connection_lost(self, exc: Exception | None) -> None:
        self._listeners.connections.get(self._port, set()).discard(self)

    def data_received(self, data: bytes) -> None:
        self._buffer += data
        self._pump()

    def _pump(self) -> None:
        while self._buffer and not self._busy and self.transport is not None:
            consumed = self._parser.received(self._buffer)
            self._buffer = self._buffer[consumed:]
            if self._parser.completed:
                request, self._parser = self._parser, HTTPRequestParser(_ADJUSTMENTS)
                self._start(request)
            elif consumed == 0:
                return

    def _start(self, request: HTTPRequestParser) -> None:
        if request.error is not None:
            self.transport.write(response_bytes("400 Bad Request", [], b"", close=True))
            self.transport.close()
            return
        self._busy = True
        environ = environ_for(request, self._port)
        pool = self._listeners.pool_for(environ)
        future = pool.submit(self._listeners.serve, self._port, environ)
        loop = asyncio.get_running_loop()
        future.add_done_callback(
            lambda done: loop.call_soon_threadsafe(self._finish, done, request.connection_close)
        )

    def _finish(self, done: Future, close: bool) -> None:
        self._busy = False
        if self.transport is None or self.transport.is_closing():
            return
        try:
            status, headers, body = done.result()
        except Exception:  # the app itself failed: what a WSGI server answers
            status, headers, body = "500 Internal Server Error", [], b""
        self.transport.write(response_bytes(status, headers, body, close))
        if close:
            self.transport.close()
        else:
            self._pump()


class ManyListeners:
    """Answer every request on every socket with `serve(port, environ)` until `stop()`."""

    def __init__(self, serve: Serve, threads: int) -> None:
        self.serve = serve
        self.pool = ThreadPoolExecutor(threads, thread_name_prefix="wsgi")
        # reads (polls, health) on threads of their own: a real node's poll never waits
        # behind other nodes' pushes, so neither may a simulated one's
        self.read_pool = ThreadPoolExecutor(threads, thread_name_prefix="wsgi-read")
        self.connections: dict[int, set[_Connection]] = {}
        self._servers: dict[int, asyncio.base_events.Server] = {}
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="epoll", daemon=True)

    def pool_for(self, environ: dict[str, Any]) -> ThreadPoolExecutor:
        return self.read_pool if environ["REQUEST_METHOD"] == "GET" else self.pool

    @staticmethod
    def bind(count: int, host: str = "127.0.0.1") -> list[socket.socket]:
        sockets = []
        for _ in range(count):
            listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            listener.bind((host, 0))
            listener.listen(128)
            listener.setblocking(False)
            sockets.append(listener)
        return sockets

    def start(self, sockets: list[socket.socket]) -> None:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._listen(sockets), self._loop).result(timeout=60)

    async def _listen(self, sockets: list[socket.socket]) -> None:
        for listener in sockets:
            port = listener.getsockname()[1]
            self._servers[port] = await self._loop.create_server(
                lambda port=port: _Connection(self, port), sock=listener
            )

    def close(self, port: int) -> None:
        """Stop listening on `port` and reset its open connections: a node that is gone."""

        def _close() -> None:
            self._servers.pop(port).close()
            for connection in list(self.connections.pop(port, ())):
                if connection.transport is not None:
                    connection.transport.abort()

        self._loop.call_soon_threadsafe(_close)

    def stop(self) -> None:
        for port in list(self._servers):
            self.close(port)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=5)
        self.pool.shutdown(wait=False, cancel_futures=True)
        self.read_pool.shutdown(wait=False, cancel_futures=True)
