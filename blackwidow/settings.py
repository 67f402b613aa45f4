"""Settings: the only place that reads the environment, once, checking each value and its unit.

Durations are seconds everywhere. Secrets are kept out of repr so they never reach logs.
"""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import ipaddress
import json
import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from marshmallow import ValidationError

from sources.credentials import NAME_PATTERN
from sources.registry import CREDENTIAL_SCHEMAS

ROUTING_STRATEGIES = ("modulo", "rendezvous", "weighted")
MAX_SHARDS = 1024  # as many as a node accepts in a shard header
MAX_FETCHERS = 256  # a node's threads stay bounded whatever the number of feeds


Network = ipaddress.IPv4Network | ipaddress.IPv6Network


class SettingsError(ValueError):
    """A bad environment value; `name` is the variable to fix."""

    def __init__(self, name: str, message: str) -> None:
        super().__init__(f"{name}: {message}")
        self.name = name


@dataclass(frozen=True)
class Settings:
    database_url: str = "sqlite:///blackwidow.db"
    store_url: str = "sqlite:///blackwidow-items.db"
    # seconds a statement waits for another transaction's lock before the API answers 503
    database_busy_timeout: float = 15.0
    # seconds the hub waits on a database that does not answer at all (connecting, a pooled
    # connection, a reply on a cut network) before the API answers 503
    database_timeout: float = 5.0
    admin_token: str | None = field(default=None, repr=False)
    cluster_secret: str | None = field(default=None, repr=False)
    poll_interval: float = 2.0
    phi_suspect: float = 3.0  # failure detector: phi at which a node is shown as suspect
    phi_dead: float = 8.0  # ... and at which it is declared dead and its crawlers move
    phi_min_std: float = 0.2  # seconds
    acceptable_pause: float = 3.0  # seconds of silence tolerated beyond a node's usual rhythm
    phi_window: int = 100  # poll inter-arrival times kept per node
    orphan_after: float = 30.0
    detach_after: float = 60.0
    dead_node_retention: float = 86_400.0  # seconds a dead node stays listed before deletion
    routing: str = "modulo"
    monitor_shards: int = 1  # crawlers split by source key, each shard with its own leader
    fetch_allow: frozenset[str] = frozenset()
    node_networks: tuple[Network, ...] = ()
    feed_interval: float = 60.0
    fetch_deadline: float = 20.0  # seconds for a whole response, however slowly it trickles
    node_capacity: int = 100
    # weighted routing: capacity kept spare beyond the data sources, as a fraction of them,
    # when GET /api/v1/nodes/count says how many nodes are desired
    capacity_headroom: float = 0.25
    redis_url: str | None = field(default=None, repr=False)
    queue_maxlen: int = 100_000  # entries each crawler's stream keeps, trimmed approximately
    node_buffer: int = 5000  # items a node holds per subscriber, and in its queue outbox
    outbox_dir: str = "blackwidow-outbox"  # a node's queue spool file lives here, per address
    # a node's own provider credentials: source -> name -> validated fields (secrets inside)
    credentials: Mapping[str, Mapping[str, dict[str, Any]]] = field(
        default_factory=dict, repr=False
    )
    search_interval: float = 60.0  # seconds between polls of a recent search
    rate_limit_wait: float = 60.0  # first wait after a provider's 429; doubles while it lasts
    fetchers: int = 32  # a node's fetcher threads, shared by every polled data source
    host_concurrency: int = 2  # fetches in flight at once to one host, per node
    host_gap: float = 0.2  # seconds at least between two fetches starting at one host
    metrics_token: str | None = field(default=None, repr=False)  # bearer a scrape must carry
    metrics_networks: tuple[Network, ...] = ()  # networks scrapes may come from; empty: any
    # prometheus-client's multiprocess directory (its own variable): set, a hub scrape counts
    # the API requests of every gunicorn worker (blackwidow.gunicorn_conf sets it up)
    metrics_dir: str | None = None
    # the cluster's webhook: every alert event is POSTed here, signed with the secret
    webhook_url: str | None = field(default=None, repr=False)  # a URL may carry a token
    webhook_secret: str | None = field(default=None, repr=False)
    source_failing_after: float = 300.0  # seconds a data source gets nothing before an alert
    node_holding_items: int = 1000  # items a node holds during an outage before an alert
    # signs the dashboard's session cookie; unset, it is derived from the cluster secret
    session_secret: str | None = field(default=None, repr=False)
    # mark the session cookie Secure although the hub sees plain http (TLS ends at a proxy)
    session_cookie_secure: bool = False
    # a node's seen-set (spawn.pool.seen_set): a Bloom filter per crawler in front of the store's
    # "stored already?" read; off, every id is read
    seen_set: bool = True

    def replace(self, **changes: Any) -> Settings:
        return dataclasses.replace(self, **changes)


def _float(name: str, raw: str, expected: str) -> float:
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if math.isnan(value) or math.isinf(value):
        raise SettingsError(name, f"expected {expected}, got {raw!r}")
    return value


def _seconds(name: str, raw: str) -> float:
    value = _float(name, raw, "seconds")
    if not value > 0:
        raise SettingsError(name, f"must be more than 0 seconds, got {raw!r}")
    return value


def _pause(name: str, raw: str) -> float:
    value = _float(name, raw, "seconds")
    if not value >= 0:
        raise SettingsError(name, f"must be 0 seconds or more, got {raw!r}")
    return value


def _phi(name: str, raw: str) -> float:
    value = _float(name, raw, "a number")
    if not 0 < value < 1000:
        raise SettingsError(name, f"must be between 0 and 1000, got {raw!r}")
    return value


def _positive_int(name: str, raw: str) -> int:
    try:
        value = int(raw)
    except ValueError:
        raise SettingsError(name, f"expected a whole number, got {raw!r}") from None
    if value < 1:
        raise SettingsError(name, f"must be at least 1, got {raw!r}")
    return value


def _headroom(name: str, raw: str) -> float:
    value = _float(name, raw, "a fraction")
    if not 0 <= value <= 10:
        raise SettingsError(name, f"must be between 0 and 10, got {raw!r}")
    return value


def _fetcher_count(name: str, raw: str) -> int:
    value = _positive_int(name, raw)
    if value > MAX_FETCHERS:
        raise SettingsError(name, f"must be at most {MAX_FETCHERS} threads, got {raw!r}")
    return value


def _shard_count(name: str, raw: str) -> int:
    value = _positive_int(name, raw)
    if value > MAX_SHARDS:
        raise SettingsError(name, f"must be at most {MAX_SHARDS}, got {raw!r}")
    return value


def _choice(name: str, raw: str) -> str:
    if raw not in ROUTING_STRATEGIES:
        raise SettingsError(name, f"expected one of {', '.join(ROUTING_STRATEGIES)}, got {raw!r}")
    return raw


def _hosts(name: str, raw: str) -> frozenset[str]:
    return frozenset(h.strip().lower() for h in raw.split(",") if h.strip())


def _networks(name: str, raw: str) -> tuple[Network, ...]:
    try:
        return tuple(
            ipaddress.ip_network(part.strip(), strict=False)
            for part in raw.split(",")
            if part.strip()
        )
    except ValueError as error:
        raise SettingsError(
            name, f"expected networks like 10.0.0.0/8, got {raw!r} ({error})"
        ) from None


def _credentials(name: str, raw: str) -> dict[str, dict[str, dict[str, Any]]]:
    """`{"twitter": {"default": {"bearer_token": ...}}}`, each checked by its source's schema.

    Errors name the place (`twitter.default.bearer_token`), never a value: it may be a secret.
    """
    try:
        data = json.loads(raw)
    except ValueError:
        raise SettingsError(name, "expected a JSON object") from None
    if not isinstance(data, dict):
        raise SettingsError(name, "expected a JSON object of sources")
    checked: dict[str, dict[str, dict[str, Any]]] = {}
    for source, named in data.items():
        schema = CREDENTIAL_SCHEMAS.get(source)
        if schema is None:
            billed = ", ".join(CREDENTIAL_SCHEMAS)
            raise SettingsError(name, f"{source}: not a source with credentials ({billed})")
        if not isinstance(named, dict):
            raise SettingsError(name, f"{source}: expected an object of named credentials")
        checked[source] = {}
        for credential, fields_ in named.items():
            if not re.match(NAME_PATTERN, credential):
                raise SettingsError(name, f"{source}.{credential}: not a credential name")
            if not isinstance(fields_, dict):
                raise SettingsError(name, f"{source}.{credential}: expected an object of fields")
            try:
                checked[source][credential] = schema().load(fields_)
            except ValidationError as error:
                first, problems = next(iter(error.normalized_messages().items()))
                raise SettingsError(name, f"{source}.{credential}.{first}: {problems}") from None
    return checked


def _webhook_url(name: str, raw: str) -> str:
    """Only the form here; where it points is checked at each delivery (the fetch rules)."""
    parts = urlsplit(raw.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise SettingsError(name, "expected an http or https URL with a host")
    return raw.strip()


def _flag(name: str, raw: str) -> bool:
    value = raw.strip().lower()
    if value not in ("0", "1", "true", "false", "yes", "no"):
        raise SettingsError(name, f"expected 1 or 0, got {raw!r}")
    return value in ("1", "true", "yes")


def _text(name: str, raw: str) -> str:
    if not raw.strip():
        raise SettingsError(name, "must not be empty")
    return raw


# environment variable -> (settings field, parser)
_VARIABLES = {
    "BLACKWIDOW_DATABASE_URL": ("database_url", _text),
    "BLACKWIDOW_STORE": ("store_url", _text),
    "BLACKWIDOW_DATABASE_BUSY_TIMEOUT": ("database_busy_timeout", _seconds),
    "BLACKWIDOW_DATABASE_TIMEOUT": ("database_timeout", _seconds),
    "BLACKWIDOW_ADMIN_TOKEN": ("admin_token", _text),
    "BLACKWIDOW_CLUSTER_SECRET": ("cluster_secret", _text),
    "BLACKWIDOW_POLL_INTERVAL": ("poll_interval", _seconds),
    "BLACKWIDOW_PHI_SUSPECT": ("phi_suspect", _phi),
    "BLACKWIDOW_PHI_DEAD": ("phi_dead", _phi),
    "BLACKWIDOW_PHI_MIN_STD": ("phi_min_std", _seconds),
    "BLACKWIDOW_ACCEPTABLE_PAUSE": ("acceptable_pause", _pause),
    "BLACKWIDOW_PHI_WINDOW": ("phi_window", _positive_int),
    "BLACKWIDOW_ORPHAN_AFTER": ("orphan_after", _seconds),
    "BLACKWIDOW_DETACH_AFTER": ("detach_after", _seconds),
    "BLACKWIDOW_DEAD_NODE_RETENTION": ("dead_node_retention", _seconds),
    "BLACKWIDOW_ROUTING": ("routing", _choice),
    "BLACKWIDOW_MONITOR_SHARDS": ("monitor_shards", _shard_count),
    "BLACKWIDOW_FETCH_ALLOW": ("fetch_allow", _hosts),
    "BLACKWIDOW_NODE_NETWORKS": ("node_networks", _networks),
    "BLACKWIDOW_FEED_INTERVAL": ("feed_interval", _seconds),
    "BLACKWIDOW_FETCH_DEADLINE": ("fetch_deadline", _seconds),
    "BLACKWIDOW_NODE_CAPACITY": ("node_capacity", _positive_int),
    "BLACKWIDOW_CAPACITY_HEADROOM": ("capacity_headroom", _headroom),
    "BLACKWIDOW_REDIS_URL": ("redis_url", _text),
    "BLACKWIDOW_QUEUE_MAXLEN": ("queue_maxlen", _positive_int),
    "BLACKWIDOW_NODE_BUFFER": ("node_buffer", _positive_int),
    "BLACKWIDOW_OUTBOX_DIR": ("outbox_dir", _text),
    "BLACKWIDOW_CREDENTIALS": ("credentials", _credentials),
    "BLACKWIDOW_SEARCH_INTERVAL": ("search_interval", _seconds),
    "BLACKWIDOW_RATE_LIMIT_WAIT": ("rate_limit_wait", _seconds),
    "BLACKWIDOW_FETCHERS": ("fetchers", _fetcher_count),
    "BLACKWIDOW_HOST_CONCURRENCY": ("host_concurrency", _positive_int),
    "BLACKWIDOW_HOST_GAP": ("host_gap", _pause),
    "BLACKWIDOW_METRICS_TOKEN": ("metrics_token", _text),
    "BLACKWIDOW_METRICS_NETWORKS": ("metrics_networks", _networks),
    "PROMETHEUS_MULTIPROC_DIR": ("metrics_dir", _text),
    "BLACKWIDOW_WEBHOOK_URL": ("webhook_url", _webhook_url),
    "BLACKWIDOW_WEBHOOK_SECRET": ("webhook_secret", _text),
    "BLACKWIDOW_SOURCE_FAILING_AFTER": ("source_failing_after", _seconds),
    "BLACKWIDOW_NODE_HOLDING_ITEMS": ("node_holding_items", _positive_int),
    "BLACKWIDOW_SESSION_SECRET": ("session_secret", _text),
    "BLACKWIDOW_SESSION_COOKIE_SECURE": ("session_cookie_secure", _flag),
    "BLACKWIDOW_SEEN_SET": ("seen_set", _flag),
}


def from_env(environ: Mapping[str, str] | None = None) -> Settings:
    """Build settings from the environment; raise SettingsError naming the bad variable."""
    environ = os.environ if environ is None else environ
    values = {
        attribute: parse(name, environ[name])
        for name, (attribute, parse) in _VARIABLES.items()
        if name in environ
    }
    settings = Settings(**values)
    if settings.phi_suspect > settings.phi_dead:
        raise SettingsError(
            "BLACKWIDOW_PHI_SUSPECT",
            f"must not exceed BLACKWIDOW_PHI_DEAD ({settings.phi_dead:g}), "
            f"got {settings.phi_suspect:g}",
        )
    if settings.phi_window < 2:
        raise SettingsError("BLACKWIDOW_PHI_WINDOW", "must be at least 2")
    if (settings.webhook_url is None) != (settings.webhook_secret is None):
        raise SettingsError(
            "BLACKWIDOW_WEBHOOK_SECRET",
            "BLACKWIDOW_WEBHOOK_URL and BLACKWIDOW_WEBHOOK_SECRET are set together "
            "(every delivery is signed)",
        )
    return settings


_SESSION_KEY_LABEL = b"blackwidow dashboard session cookies"


def session_key(settings: Settings) -> bytes | None:
    """The key that signs the dashboard's session cookies: BLACKWIDOW_SESSION_SECRET, else one
    derived from the cluster secret (or the admin token), so every hub process and gunicorn
    worker signs alike without another secret to set. None: no secret, so no sign-in."""
    if settings.session_secret:
        return settings.session_secret.encode()
    base = settings.cluster_secret or settings.admin_token
    if not base:
        return None
    return hmac.new(base.encode(), _SESSION_KEY_LABEL, hashlib.sha256).digest()
