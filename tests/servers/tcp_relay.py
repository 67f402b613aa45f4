"""TCP relay: forwards every connection to one upstream, byte for byte, so a test can cut one
client's path (by the relay's port) and leave the server to the others, or slow a link down.

`with TcpRelay(15432) as relay:` then connect to `relay.port`. It injects no fault itself but
an optional fixed `delay`, each way, on every byte (the kernel here has no `netem`): a
userspace relay cannot stop acknowledging what it receives, so a cut that a client's TCP stack
must notice is made with the kernel's packet filter on `relay.port`. It listens on 127.0.0.1
unless given a `host` (the cluster tier's bridge address). `close()` then `accept()` make the
upstream look stopped and started again to its clients: connections closed and refused, then
taken on the same port.
"""

from __future__ import annotations

import contextlib
import queue
import socket
import threading
import time


class TcpRelay:
    def __init__(
        self,
        upstream_port: int,
        upstream_host: str = "127.0.0.1",
        host: str = "127.0.0.1",
        delay: float = 0.0,
    ) -> None:
        self._upstream = (upstream_host, upstream_port)
        self.delay = delay  # seconds each chunk waits before it is sent on, each way
        self.host = host
        self.port = 0
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self.accept()

    def accept(self) -> None:
        """Listen (again, on the same port after `close`) and relay what connects."""
        listener = socket.create_server((self.host, self.port))  # SO_REUSEADDR: rebinds at once
        self.port = listener.getsockname()[1]
        self._listener = listener
        threading.Thread(
            target=self._accept, args=(listener,), name="tcp-relay", daemon=True
        ).start()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _address = listener.accept()
                upstream = socket.create_connection(self._upstream, timeout=10)
            except OSError:
                return  # closed
            upstream.settimeout(None)
            with self._lock:
                self._sockets += [client, upstream]
            for source, target in ((client, upstream), (upstream, client)):
                threading.Thread(
                    target=_pump, args=(source, target, self.delay), daemon=True
                ).start()

    def close(self) -> None:
        """As if the upstream stopped: every connection ended, new ones refused."""
        with contextlib.suppress(OSError):
            self._listener.close()
        with self._lock:
            for sock in self._sockets:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)  # wakes the pump blocked reading it
                with contextlib.suppress(OSError):
                    sock.close()
            self._sockets.clear()

    def __enter__(self) -> TcpRelay:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def _pump(source: socket.socket, target: socket.socket, delay: float) -> None:
    """Relay what `source` sends; with a delay, each chunk goes on `delay` after it came, in
    order, from a thread of its own so that reading never waits on the delay."""
    if not delay:
        with contextlib.suppress(OSError):
            while data := source.recv(65536):
                target.sendall(data)
        _end(target)
        return
    pending: queue.SimpleQueue[tuple[float, bytes]] = queue.SimpleQueue()
    threading.Thread(target=_deliver, args=(pending, target), daemon=True).start()
    with contextlib.suppress(OSError):
        while data := source.recv(65536):
            pending.put((time.monotonic() + delay, data))
    pending.put((time.monotonic() + delay, b""))


def _deliver(pending: queue.SimpleQueue[tuple[float, bytes]], target: socket.socket) -> None:
    while True:
        due, data = pending.get()
        time.sleep(max(0.0, due - time.monotonic()))
        if not data:
            break
        try:
            target.sendall(data)
        except OSError:
            return
    _end(target)


def _end(target: socket.socket) -> None:
    with contextlib.suppress(OSError):
        target.shutdown(socket.SHUT_WR)
