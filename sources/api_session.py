"""HTTP sessions for provider APIs: every connection peer-checked like a feed fetch, the
official API host optionally answered by another base URL (a gateway, or a local stand-in),
and streaming answers that can be hung up at once.

Client libraries such as tweepy build their URLs on a fixed host; mounting this adapter on
their requests session is how a credential's `api_base` takes effect without touching them.
Hanging up matters for streams: a provider allows one connection per app or query, so a
stopped source must free it now, not at its next keep-alive (X sends one every 20 s).
"""

from __future__ import annotations

import contextlib
import socket
import weakref
from typing import Any

import requests
from requests.adapters import BaseAdapter, HTTPAdapter

from sources.fetcher import GuardedFetcher

DEFAULT_TIMEOUT = (5.0, 30.0)  # (connect, read) seconds, for client calls that set none


class _ProviderAdapter(BaseAdapter):
    def __init__(self, inner: HTTPAdapter, official: str = "", base: str = "") -> None:
        super().__init__()
        self._inner = inner
        self._official = official
        self._base = base
        self._streams: weakref.WeakSet[requests.Response] = weakref.WeakSet()

    def send(
        self,
        request: requests.PreparedRequest,
        stream: bool = False,
        timeout: Any = None,
        **kwargs: Any,
    ) -> requests.Response:
        url = request.url or ""
        if self._official and url.startswith(self._official):
            request.url = self._base + url[len(self._official) :]
        response = self._inner.send(
            request, stream=stream, timeout=timeout or DEFAULT_TIMEOUT, **kwargs
        )
        if stream:
            self._streams.add(response)
        return response

    def hang_up(self) -> None:
        """Shut the sockets of streaming answers still being read: the reader wakes up now."""
        for response in list(self._streams):
            connection = getattr(response.raw, "connection", None)
            sock = getattr(connection, "reading_socket", None)
            if sock is not None:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)

    def close(self) -> None:
        self._inner.close()


def route(
    session: requests.Session,
    fetcher: GuardedFetcher,
    official: str,
    base: str,
) -> requests.Session:
    """Guard `session` and send what it asks of `official` to `base` instead."""
    adapter = _ProviderAdapter(fetcher.guarded_adapter(), official.rstrip("/"), base.rstrip("/"))
    return _mount(session, adapter)


def guarded(session: requests.Session, fetcher: GuardedFetcher) -> requests.Session:
    """Guard `session`: each connection's peer is checked as the fetcher's are."""
    return _mount(session, _ProviderAdapter(fetcher.guarded_adapter()))


def hang_up(session: requests.Session) -> None:
    """End every streaming answer `session` is reading (see the module's docstring)."""
    for adapter in session.adapters.values():
        if isinstance(adapter, _ProviderAdapter):
            adapter.hang_up()


def _mount(session: requests.Session, adapter: BaseAdapter) -> requests.Session:
    session.trust_env = False  # a proxy from the environment would bypass the guard
    session.mount("http://", adapter)
    session.mount("https://", adapter)
    return session
