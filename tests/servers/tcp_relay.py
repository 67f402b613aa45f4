"""TCP relay on 127.0.0.1: forwards every connection to one loopback upstream, byte for byte,
so a test can cut one client's path (by the relay's port) and leave the server to the others.

`with TcpRelay(15432) as relay:` then connect to `relay.port`. It decides nothing and injects
no fault itself: a userspace relay cannot stop acknowledging what it receives, so a cut that a
client's TCP stack must notice is made with the kernel's packet filter on `relay.port`.
"""

from __future__ import annotations

import contextlib
import socket
import threading


class TcpRelay:
    def __init__(self, upstream_port: int, upstream_host: str = "127.0.0.1") -> None:
        self._upstream = (upstream_host, upstream_port)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, name="tcp-relay", daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _address = self._listener.accept()
                upstream = socket.create_connection(self._upstream, timeout=10)
            except OSError:
                return  # closed
            upstream.settimeout(None)
            with self._lock:
                self._sockets += [client, upstream]
            for source, target in ((client, upstream), (upstream, client)):
                threading.Thread(target=_pump, args=(source, target), daemon=True).start()

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._listener.close()
        with self._lock:
            for sock in self._sockets:
                with contextlib.suppress(OSError):
                    sock.close()

    def __enter__(self) -> TcpRelay:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def _pump(source: socket.socket, target: socket.socket) -> None:
    with contextlib.suppress(OSError):
        while data := source.recv(65536):
            target.sendall(data)
    with contextlib.suppress(OSError):
        target.shutdown(socket.SHUT_WR)
