"""Serve a WSGI app with waitress; print the URL as the first line of stdout.

Binding port 0 lets tests and the demo run many servers side by side: each reads the
chosen port from that first line.
"""

from __future__ import annotations

import logging
import signal
import sys
import threading
from collections.abc import Callable

from flask import Flask
from waitress import create_server

log = logging.getLogger(__name__)


def bind(app: Flask, host: str, port: int) -> tuple[object, str]:
    """A bound (not yet running) server and its URL.

    poll() rather than select(): a hub keeps a connection open to every node, so its own
    sockets' descriptors pass select()'s limit of 1,024 once it has a thousand nodes.
    """
    server = create_server(
        app, host=host, port=port, threads=8, ident="blackwidow", asyncore_use_poll=True
    )
    shown_host = f"[{host}]" if ":" in host else host
    return server, f"http://{shown_host}:{server.effective_port}"


def run(
    server: object,
    url: str,
    on_stop: Callable[[], None] = lambda: None,
    drain: Callable[[], None] | None = None,
) -> None:
    """Announce the URL, serve until SIGTERM or SIGINT, then clean up. With `drain`, the
    first signal runs it on a thread while the server still answers (a node leaving the
    cluster answers the hub's polls until it has handed its crawlers on), and closes once
    it returns; a second signal closes at once."""
    draining = threading.Event()

    def _close() -> None:
        server.close()  # type: ignore[attr-defined]
        # waitress keeps serving open connections after its listener closes: a hub holds a
        # kept-alive connection to every node, so without this a node would never stop
        for channel in list(server._map.values()):  # type: ignore[attr-defined]
            channel.close()

    def _drain_then_close() -> None:
        assert drain is not None
        try:
            drain()
        finally:  # closed by the server's own loop: its channels are not thread-safe
            server.trigger.pull_trigger(_close)  # type: ignore[attr-defined]

    def _signalled(signum: int, _frame: object) -> None:
        log.info("stopping signal=%s", signum)
        if drain is None or draining.is_set():
            _close()
            return
        draining.set()
        threading.Thread(target=_drain_then_close, name="drain", daemon=True).start()

    signal.signal(signal.SIGTERM, _signalled)
    signal.signal(signal.SIGINT, _signalled)
    print(url, flush=True)
    log.info("listening url=%s", url)
    try:
        server.run()  # type: ignore[attr-defined]
    except OSError:  # the socket closed under asyncore's loop on shutdown
        pass
    finally:
        on_stop()
        sys.stdout.flush()
