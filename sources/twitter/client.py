"""tweepy clients for a credential: guarded like every fetch, routed to its `api_base`, and
never logging a secret."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import requests

from sources import api_session
from sources.fetch.fetcher import GuardedFetcher
from sources.twitter.query import DEFAULT_API_BASE

MAX_LINE = 1024 * 1024  # bytes: a streamed tweet with its expansions is a few kilobytes

# tweepy logs every request's headers, bearer token included, at DEBUG: never let it.
logging.getLogger("tweepy").setLevel(logging.INFO)


def x_client(
    make: Callable[..., Any], credential: dict[str, Any], fetcher: GuardedFetcher, **options: Any
) -> Any:
    """A tweepy client for the credential, guarded and routed to its `api_base`."""
    client = make(credential["bearer_token"], **options)
    route(client.session, credential, fetcher)
    return client


def route(session: requests.Session, credential: dict[str, Any], fetcher: GuardedFetcher) -> None:
    """Guard a tweepy session and send it to the credential's `api_base`."""
    api_session.route(session, fetcher, DEFAULT_API_BASE, credential["api_base"], MAX_LINE)
