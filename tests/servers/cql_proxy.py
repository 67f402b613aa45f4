"""CQL fault proxy: relays Cassandra's native protocol on 127.0.0.1 and loses the replies to
chosen statements — Cassandra runs the statement, the client never hears back — for tests.

It reads each request's CQL (QUERY, BATCH, and EXECUTE through the PREPARE answers it relays)
in protocol v4 without compression, as the store speaks it. A lost reply either hangs up the
client's connection right after the statement ran, as a failing coordinator would (the driver
fails every request in flight on that connection with NoHostAvailable, then reconnects), or,
`hang_up=False`, is dropped alone while the connection carries on, as lost packets would: the
driver waits out its request timeout (OperationTimedOut) and later requests are answered.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import struct
import threading
from dataclasses import dataclass, field

logger = logging.getLogger(__name__)

HEADER = struct.Struct(">BBhBI")  # version, flags, stream, opcode, body length (v3 and up)
QUERY, PREPARE, EXECUTE, BATCH, RESULT = 0x07, 0x09, 0x0A, 0x0D, 0x08
PREPARED = 0x0004  # RESULT kind
COMPRESSED = 0x01  # header flag


@dataclass
class _Rule:
    cql: str
    remaining: int
    hang_up: bool


@dataclass
class _Connection:
    """One client connection and its upstream: requests still waiting for their answer."""

    client: socket.socket
    upstream: socket.socket
    preparing: dict[int, str] = field(default_factory=dict)  # stream -> CQL being prepared
    doomed: dict[int, bool] = field(default_factory=dict)  # stream whose answer is lost -> hang up

    def hang_up(self) -> None:
        for sock in (self.client, self.upstream):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)


class CqlProxy:
    """`with CqlProxy(19042) as proxy: proxy.lose_reply("items_by_id", times=1)`; point the
    driver at `proxy.contact_points`. `lost` counts the replies lost so far."""

    def __init__(self, upstream_port: int, upstream_host: str = "127.0.0.1") -> None:
        self._upstream = (upstream_host, upstream_port)
        self._lock = threading.Lock()
        self._rules: list[_Rule] = []
        self._prepared: dict[bytes, str] = {}  # statement id -> CQL, learnt from answers
        self._connections: list[_Connection] = []
        self.lost = 0
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.contact_points = f"127.0.0.1:{self._listener.getsockname()[1]}"
        threading.Thread(target=self._accept, name="cql-proxy", daemon=True).start()

    def lose_reply(self, cql: str, times: int = 1, hang_up: bool = True) -> None:
        """Lose the answers to the next `times` requests with a statement whose CQL contains
        `cql` (a batch matches when one of its statements does), hanging up the connection
        or, `hang_up=False`, dropping the answer alone."""
        with self._lock:
            self._rules.append(_Rule(cql, times, hang_up))

    def rules_left(self) -> int:
        with self._lock:
            return len(self._rules)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._listener.close()
        with self._lock:
            connections = list(self._connections)
        for connection in connections:
            connection.hang_up()

    def __enter__(self) -> CqlProxy:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
                upstream = socket.create_connection(self._upstream)
            except OSError:
                return  # closed
            connection = _Connection(client, upstream)
            with self._lock:
                self._connections.append(connection)
            for pump in (self._requests, self._answers):
                threading.Thread(target=pump, args=(connection,), daemon=True).start()

    def _requests(self, connection: _Connection) -> None:
        """Client to Cassandra: note what each request runs, and relay it unchanged."""
        while (frame := _read_frame(connection.client)) is not None:
            header, body = frame
            _, flags, stream, opcode, _ = HEADER.unpack(header)
            if not flags & COMPRESSED:
                statements = self._statements(opcode, body)
                with self._lock:
                    if opcode == PREPARE:  # learnt from, never lost: it runs nothing
                        connection.preparing[stream] = statements[0]
                    elif (rule := self._doom(statements)) is not None:
                        connection.doomed[stream] = rule.hang_up
            if not _send(connection.upstream, header + body):
                break
        connection.hang_up()

    def _answers(self, connection: _Connection) -> None:
        """Cassandra to client: learn prepared ids; lose a doomed answer and hang up."""
        while (frame := _read_frame(connection.upstream)) is not None:
            header, body = frame
            _, flags, stream, opcode, _ = HEADER.unpack(header)
            with self._lock:
                cql = connection.preparing.pop(stream, None)
                if cql is not None and opcode == RESULT and not flags & COMPRESSED:
                    self._learn(body, cql)
                hang_up = connection.doomed.pop(stream, None)
                if hang_up is not None:
                    self.lost += 1
            if hang_up is not None:
                logger.debug("cql proxy lost a reply stream=%s hang_up=%s", stream, hang_up)
                if hang_up:
                    break
                continue
            if not _send(connection.client, header + body):
                break
        connection.hang_up()

    def _learn(self, body: bytes, cql: str) -> None:
        (kind,) = struct.unpack_from(">i", body)
        if kind == PREPARED:
            (size,) = struct.unpack_from(">H", body, 4)
            self._prepared[body[6 : 6 + size]] = cql

    def _doom(self, statements: list[str]) -> _Rule | None:
        """With the lock held: the first rule any statement matches spends one use."""
        for rule in self._rules:
            if any(rule.cql in cql for cql in statements):
                rule.remaining -= 1
                if rule.remaining == 0:
                    self._rules.remove(rule)
                return rule
        return None

    def _statements(self, opcode: int, body: bytes) -> list[str]:
        """The CQL a request runs ("" for a prepared id never seen answered)."""
        if opcode in (QUERY, PREPARE):
            return [_long_string(body, 0)[0]]
        if opcode == EXECUTE:
            with self._lock:
                return [self._prepared.get(_short_bytes(body, 0)[0], "")]
        if opcode == BATCH:
            return self._batch_statements(body)
        return []

    def _batch_statements(self, body: bytes) -> list[str]:
        (count,) = struct.unpack_from(">H", body, 1)
        offset, found = 3, []
        for _ in range(count):
            kind = body[offset]
            if kind == 0:
                cql, offset = _long_string(body, offset + 1)
            else:
                statement_id, offset = _short_bytes(body, offset + 1)
                with self._lock:
                    cql = self._prepared.get(statement_id, "")
            found.append(cql)
            (values,) = struct.unpack_from(">H", body, offset)
            offset += 2
            for _ in range(values):
                (size,) = struct.unpack_from(">i", body, offset)
                offset += 4 + max(size, 0)
        return found


def _long_string(body: bytes, offset: int) -> tuple[str, int]:
    (size,) = struct.unpack_from(">i", body, offset)
    end = offset + 4 + size
    return body[offset + 4 : end].decode(), end


def _short_bytes(body: bytes, offset: int) -> tuple[bytes, int]:
    (size,) = struct.unpack_from(">H", body, offset)
    end = offset + 2 + size
    return body[offset + 2 : end], end


def _read_frame(sock: socket.socket) -> tuple[bytes, bytes] | None:
    header = _read_exactly(sock, HEADER.size)
    if header is None:
        return None
    body = _read_exactly(sock, HEADER.unpack(header)[4])
    return None if body is None else (header, body)


def _read_exactly(sock: socket.socket, size: int) -> bytes | None:
    chunks, left = [], size
    while left:
        try:
            chunk = sock.recv(min(left, 1 << 16))
        except OSError:
            return None
        if not chunk:
            return None
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _send(sock: socket.socket, data: bytes) -> bool:
    try:
        sock.sendall(data)
    except OSError:
        return False
    return True
