"""HTTP sessions for provider APIs: every connection peer-checked like a feed fetch, the
official API host optionally answered by another base URL (a gateway, or a local stand-in),
and streaming answers that can be hung up at once.

Client libraries such as tweepy build their URLs on a fixed host; mounting this adapter on
their requests session is how a credential's `api_base` takes effect without touching them.
A tweepy stream's lines are bounded here, since tweepy buffers a line whole. Hanging up
matters for streams: a provider allows one connection per app or query, so a
stopped source must free it now, not at its next keep-alive (X sends one every 20 s).
"""

from __future__ import annotations

import contextlib
import socket
import weakref
from collections.abc import Iterator
from typing import Any

import requests
from requests.adapters import BaseAdapter, HTTPAdapter
from urllib3.exceptions import ProtocolError

from sources.fetch.fetcher import GuardedFetcher

DEFAULT_TIMEOUT = (5.0, 30.0)  # (connect, read) seconds, for client calls that set none


class _LineBounded:
    """A streaming body that refuses a line longer than `limit` bytes as it arrives: a client
    library reading lines (tweepy) would otherwise buffer whatever a host sends, without end.
    Everything else is the wrapped urllib3 response's."""

    def __init__(self, raw: Any, limit: int) -> None:
        self._raw = raw
        self._limit = limit

    def stream(self, amt: int | None = None, decode_content: bool | None = None) -> Iterator[bytes]:
        run = 0  # bytes of the line still open
        for chunk in self._raw.stream(amt, decode_content=decode_content):
            *ended, rest = chunk.split(b"\n")
            longest = max([run + len(ended[0]), *map(len, ended[1:])]) if ended else 0
            run = len(rest) if ended else run + len(rest)
            if max(longest, run) > self._limit:
                self._raw.close()
                raise ProtocolError(f"a line longer than {self._limit} bytes")
            yield chunk

    def __getattr__(self, name: str) -> Any:
        return getattr(self._raw, name)


class _ProviderAdapter(BaseAdapter):
    def __init__(
        self, inner: HTTPAdapter, official: str = "", base: str = "", max_line: int | None = None
    ) -> None:
        super().__init__()
        self._inner = inner
        self._official = official
        self._base = base
        self._max_line = max_line
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
            if self._max_line is not None:
                response.raw = _LineBounded(response.raw, self._max_line)
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
    max_line: int,
) -> requests.Session:
    """Guard `session`, send what it asks of `official` to `base` instead, and end a streamed
    answer with a line longer than `max_line` bytes (the client then reconnects)."""
    adapter = _ProviderAdapter(
        fetcher.guarded_adapter(), official.rstrip("/"), base.rstrip("/"), max_line
    )
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
