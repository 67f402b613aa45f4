"""What a source type is to a node: its query schema, its fetch target and how to open it.

Each source type is a package of its own (sources/rss, sources/twitter, ...) exporting one
`SOURCE_TYPE`; sources.registry lists them by the name crawlers use.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from marshmallow import Schema

from sources.credentials import CredentialBook
from sources.model import DataSource, SubscriberSpec
from sources.observer import UNOBSERVED, SourceObserver

if TYPE_CHECKING:  # the hub lists source types without loading the fetch side
    from sources.fetch.fetcher import GuardedFetcher
    from sources.fetch.scheduler import FetchScheduler
    from sources.fetch.workers import WorkerProcesses


@dataclass(frozen=True)
class SourceContext:
    """What a node gives its data sources."""

    fetcher: GuardedFetcher
    feed_interval: float
    credentials: CredentialBook = field(default_factory=CredentialBook)
    search_interval: float = 60.0  # seconds between polls of a recent search
    rate_limit_wait: float = 60.0  # first wait after a 429 from a provider; doubles while it lasts
    # the node's one fetch scheduler for polled sources; None: each RSS source runs its own
    scheduler: FetchScheduler | None = None
    observer: SourceObserver = UNOBSERVED  # what the node counts of streams
    # the node's worker processes for parsing; None: sources parse in the node's own process
    workers: WorkerProcesses | None = None


@dataclass(frozen=True)
class SourceType:
    query_schema: type[Schema]
    fetch_target: Callable[[dict[str, Any]], dict[str, Any]]
    open: Callable[[str, SubscriberSpec, SourceContext], DataSource]
    credential_schema: type[Schema] | None = None  # billed sources connect with a credential
