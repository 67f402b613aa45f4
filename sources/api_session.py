"""HTTP sessions for provider APIs: every connection peer-checked like a feed fetch, and the
official API host optionally answered by another base URL (a gateway, or a local stand-in).

Client libraries such as tweepy build their URLs on a fixed host; mounting this adapter on
their requests session is how a credential's `api_base` takes effect without touching them.
"""

from __future__ import annotations

from typing import Any

import requests
from requests.adapters import BaseAdapter, HTTPAdapter

from sources.fetcher import GuardedFetcher

DEFAULT_TIMEOUT = (5.0, 30.0)  # (connect, read) seconds, for client calls that set none


class _Rerouting(BaseAdapter):
    def __init__(self, inner: HTTPAdapter, official: str, base: str) -> None:
        super().__init__()
        self._inner = inner
        self._official = official
        self._base = base

    def send(
        self, request: requests.PreparedRequest, timeout: Any = None, **kwargs: Any
    ) -> requests.Response:
        url = request.url or ""
        if url.startswith(self._official):
            request.url = self._base + url[len(self._official) :]
        return self._inner.send(request, timeout=timeout or DEFAULT_TIMEOUT, **kwargs)

    def close(self) -> None:
        self._inner.close()


def route(
    session: requests.Session,
    fetcher: GuardedFetcher,
    official: str,
    base: str,
) -> requests.Session:
    """Guard `session` and send what it asks of `official` to `base` instead."""
    adapter = _Rerouting(fetcher.guarded_adapter(), official.rstrip("/"), base.rstrip("/"))
    return _mount(session, adapter)


def guarded(session: requests.Session, fetcher: GuardedFetcher) -> requests.Session:
    """Guard `session`: each connection's peer is checked as the fetcher's are."""
    return _mount(session, fetcher.guarded_adapter())


def _mount(session: requests.Session, adapter: BaseAdapter) -> requests.Session:
    session.trust_env = False  # a proxy from the environment would bypass the guard
    session.mount("http://", adapter)
    session.mount("https://", adapter)
    return session
