"""Serve a WSGI app with waitress; print the URL as the first line of stdout.

Binding port 0 lets tests and the demo run many servers side by side: each reads the
chosen port from that first line.
"""

from __future__ import annotations

import logging
import signal
import sys
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


def run(server: object, url: str, on_stop: Callable[[], None] = lambda: None) -> None:
    """Announce the URL, serve until SIGTERM or SIGINT, then clean up."""

    def _close(signum: int, _frame: object) -> None:
        log.info("stopping signal=%s", signum)
        server.close()  # type: ignore[attr-defined]
        # waitress keeps serving open connections after its listener closes: a hub holds a
        # kept-alive connection to every node, so without this a node would never stop
        for channel in list(server._map.values()):  # type: ignore[attr-defined]
            channel.close()

    signal.signal(signal.SIGTERM, _close)
    signal.signal(signal.SIGINT, _close)
    print(url, flush=True)
    log.info("listening url=%s", url)
    try:
        server.run()  # type: ignore[attr-defined]
    except OSError:  # the socket closed under asyncore's loop on shutdown
        pass
    finally:
        on_stop()
        sys.stdout.flush()
