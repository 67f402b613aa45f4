"""Settings: the only place that reads the environment, once, checking each value and its unit.

Each variable is one field of `Settings`, declared with `setting`: its name, its default, how
environs reads and checks it, and a comment saying why. Every bad variable is reported at once
in one SettingsError. Durations are seconds everywhere. Secrets are kept out of repr and out
of error messages, so they never reach logs.
"""

from __future__ import annotations

import dataclasses
import difflib
import hashlib
import hmac
import ipaddress
import json
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import MISSING, dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from environs import Env, EnvValidationError
from marshmallow import ValidationError, fields
from marshmallow.validate import OneOf, Range

from blackwidow.core.database_urls import database_url
from sources.credentials import NAME_PATTERN
from sources.registry import CREDENTIAL_SCHEMAS

ROUTING_STRATEGIES = ("modulo", "rendezvous", "weighted")
LOG_FORMATS = ("text", "json")
MAX_SHARDS = 1024  # as many as a node accepts in a shard header
MAX_FETCHERS = 256  # a node's threads stay bounded whatever the number of feeds
MAX_PARSE_WORKERS = 64


Network = ipaddress.IPv4Network | ipaddress.IPv6Network

PREFIX = "BLACKWIDOW_"
# variables read outside Settings, so no warning calls them unknown: the analysts' commands'
# (blackwidow.client.config) and the test suite's (tests/services, the model test)
OTHER_VARIABLES = frozenset(
    {
        "BLACKWIDOW_HUB_URL",
        "BLACKWIDOW_TOKEN",
        "BLACKWIDOW_KEEP_SERVICES",
        "BLACKWIDOW_SERVICE_CACHE",
        "BLACKWIDOW_MODEL_HISTORIES",
    }
)


class SettingsError(ValueError):
    """A bad environment: `problems` says what is wrong with each variable to fix, in the
    order declared, one line each; `name` is the first of them."""

    def __init__(self, problems: Mapping[str, str]) -> None:
        self.problems = dict(problems)
        self.name = next(iter(self.problems))
        super().__init__("\n".join(f"{name}: {problem}" for name, problem in problems.items()))


def data_dir() -> Path:
    """Where the hub and nodes keep their files unless a variable says otherwise: the user's
    data directory ($XDG_DATA_HOME/blackwidow, else ~/.local/share/blackwidow), never the
    working directory, which may be a checkout. It follows the process's own environment."""
    xdg = os.environ.get("XDG_DATA_HOME", "")
    return (Path(xdg) if os.path.isabs(xdg) else Path.home() / ".local" / "share") / "blackwidow"


def _sqlite_in_data_dir(name: str) -> Callable[[], str]:
    return lambda: f"sqlite:///{data_dir() / name}"


# --- how values are read: environs' own parsers, and these for the project's own types -----


def _not_blank(raw: str) -> None:
    if not raw.strip():
        raise ValidationError("must not be empty")


class _Flag(fields.Boolean):
    """1 or 0, true or false, yes or no, in any case: fewer spellings than marshmallow's."""

    truthy = {"1", "true", "yes"}
    falsy = {"0", "false", "no"}
    default_error_messages = {"invalid": "expected 1 or 0, got {input!r}"}

    def _deserialize(self, value: str, attr: Any, data: Any, **kwargs: Any) -> bool:
        return super()._deserialize(value.strip().lower(), attr, data, **kwargs)


class _Hosts(fields.Field):
    """Comma-separated host names, compared lower-case; blanks between commas are dropped."""

    def _deserialize(self, value: str, attr: Any, data: Any, **kwargs: Any) -> frozenset[str]:
        return frozenset(host.strip().lower() for host in value.split(",") if host.strip())


class _Networks(fields.Field):
    """Comma-separated networks; a bare address is a network of one."""

    def _deserialize(self, value: str, attr: Any, data: Any, **kwargs: Any) -> tuple[Network, ...]:
        try:
            parts = (part.strip() for part in value.split(","))
            return tuple(ipaddress.ip_network(part, strict=False) for part in parts if part)
        except ValueError as error:
            raise ValidationError(
                f"expected networks like 10.0.0.0/8, got {value!r} ({error})"
            ) from None


class _HttpUrl(fields.Field):
    """An http or https URL with a host. Only its form: where it points is checked at each
    delivery (the fetch rules). Never echoed: a URL may carry a token."""

    def _deserialize(self, value: str, attr: Any, data: Any, **kwargs: Any) -> str:
        try:
            parts = urlsplit(value.strip())
            usable = parts.scheme in ("http", "https") and bool(parts.hostname)
        except ValueError:
            usable = False
        if not usable:
            raise ValidationError("expected an http or https URL with a host")
        return value.strip()


class _DatabaseUrl(fields.Field):
    """A URL for the hub's SQL, as SQLAlchemy is to get it (blackwidow.core.database_urls)."""

    def _deserialize(self, value: str, attr: Any, data: Any, **kwargs: Any) -> str:
        try:
            return database_url(value)
        except ValueError as error:
            raise ValidationError(str(error)) from None


class _Credentials(fields.Field):
    """`{"twitter": {"default": {"bearer_token": ...}}}`, each checked by its source's schema.

    Errors name the place (`twitter.default.bearer_token`), never a value: it may be a secret.
    """

    def _deserialize(self, value: str, attr: Any, data: Any, **kwargs: Any) -> dict[str, Any]:
        try:
            sources = json.loads(value)
        except ValueError:
            raise ValidationError("expected a JSON object") from None
        if not isinstance(sources, dict):
            raise ValidationError("expected a JSON object of sources")
        return {source: _named_credentials(source, named) for source, named in sources.items()}


def _named_credentials(source: str, named: Any) -> dict[str, dict[str, Any]]:
    schema = CREDENTIAL_SCHEMAS.get(source)
    if schema is None:
        billed = ", ".join(CREDENTIAL_SCHEMAS)
        raise ValidationError(f"{source}: not a source with credentials ({billed})")
    if not isinstance(named, dict):
        raise ValidationError(f"{source}: expected an object of named credentials")
    checked = {}
    for credential, fields_ in named.items():
        if not re.match(NAME_PATTERN, credential):
            raise ValidationError(f"{source}.{credential}: not a credential name")
        if not isinstance(fields_, dict):
            raise ValidationError(f"{source}.{credential}: expected an object of fields")
        try:
            checked[credential] = schema().load(fields_)
        except ValidationError as error:
            first, problems = next(iter(error.normalized_messages().items()))
            raise ValidationError(f"{source}.{credential}.{first}: {problems}") from None
    return checked


# parser name (env.<name>) -> the marshmallow field that reads it
_PARSERS: dict[str, type[fields.Field]] = {
    "flag": _Flag,
    "hosts": _Hosts,
    "networks": _Networks,
    "http_url": _HttpUrl,
    "credentials": _Credentials,
    "database_url": _DatabaseUrl,
}


@dataclass(frozen=True)
class Kind:
    """How a variable is read: an environs parser and the check its value must then pass."""

    parser: str
    validate: Callable[[Any], Any] | None = None


TEXT = Kind("str", _not_blank)
SECONDS = Kind("float", Range(0, min_inclusive=False))
PAUSE = Kind("float", Range(0))  # 0: no pause
PHI = Kind("float", Range(0, 1000, min_inclusive=False, max_inclusive=False))
COUNT = Kind("int", Range(1))
FLAG = Kind("flag")
NETWORKS = Kind("networks")


def setting(
    variable: str,
    kind: Kind,
    default: Any = None,
    *,
    factory: Callable[[], Any] | None = None,
    secret: bool = False,
) -> Any:
    """A Settings field read from `variable` as `kind`, else `default` (or `factory()`);
    a secret stays out of repr."""
    metadata = {"variable": variable, "kind": kind}
    if factory is not None:
        return field(default_factory=factory, repr=not secret, metadata=metadata)
    return field(default=default, repr=not secret, metadata=metadata)


@dataclass(frozen=True)
class Settings:
    """Every variable the hub and nodes read, one field each; unset, a field has its default."""

    # the hub's SQL (a SQLAlchemy URL): its users, crawlers, nodes and assignments
    # (postgres:// is taken as PostgreSQL with psycopg 3; an unknown scheme stops the start)
    database_url: str = setting(
        "BLACKWIDOW_DATABASE_URL", Kind("database_url"), factory=_sqlite_in_data_dir("hub.db")
    )
    # the item store nodes write and the hub reads (sqlite:/// or cassandra://)
    store_url: str = setting("BLACKWIDOW_STORE", TEXT, factory=_sqlite_in_data_dir("items.db"))
    # seconds a statement waits for another transaction's lock before the API answers 503
    database_busy_timeout: float = setting("BLACKWIDOW_DATABASE_BUSY_TIMEOUT", SECONDS, 15.0)
    # seconds the hub waits on a database that does not answer at all (connecting, a pooled
    # connection, a reply on a cut network) before the API answers 503
    database_timeout: float = setting("BLACKWIDOW_DATABASE_TIMEOUT", SECONDS, 5.0)
    # bearer token for user management and the node listing; unset, there is no admin
    admin_token: str | None = setting("BLACKWIDOW_ADMIN_TOKEN", TEXT, secret=True)
    # shared by hub and nodes: every hub<->node call carries it
    cluster_secret: str | None = setting("BLACKWIDOW_CLUSTER_SECRET", TEXT, secret=True)
    # seconds between polls of every node, each followed by a reconcile pass
    poll_interval: float = setting("BLACKWIDOW_POLL_INTERVAL", SECONDS, 2.0)
    # failure detector: phi at which a node is shown as suspect ...
    phi_suspect: float = setting("BLACKWIDOW_PHI_SUSPECT", PHI, 3.0)
    # ... and at which it is declared dead and its crawlers move
    phi_dead: float = setting("BLACKWIDOW_PHI_DEAD", PHI, 8.0)
    # floor of the poll intervals' standard deviation: a metronome node is not judged on noise
    phi_min_std: float = setting("BLACKWIDOW_PHI_MIN_STD", SECONDS, 0.2)
    # seconds of silence tolerated beyond a node's usual rhythm
    acceptable_pause: float = setting("BLACKWIDOW_ACCEPTABLE_PAUSE", PAUSE, 3.0)
    # poll inter-arrival times kept per node (a distribution needs two)
    phi_window: int = setting("BLACKWIDOW_PHI_WINDOW", Kind("int", Range(2)), 100)
    # seconds a node keeps a subscriber the hub has not confirmed
    orphan_after: float = setting("BLACKWIDOW_ORPHAN_AFTER", SECONDS, 30.0)
    # seconds a node not polled at all waits before it drops everything and re-registers
    detach_after: float = setting("BLACKWIDOW_DETACH_AFTER", SECONDS, 60.0)
    # seconds a dead node stays listed before deletion
    dead_node_retention: float = setting("BLACKWIDOW_DEAD_NODE_RETENTION", SECONDS, 86_400.0)
    # seconds a crawler's shown rate is over: items stored in that window, divided by it
    rate_window: float = setting("BLACKWIDOW_RATE_WINDOW", SECONDS, 300.0)
    # how crawlers are placed on nodes (README: Routing)
    routing: str = setting("BLACKWIDOW_ROUTING", Kind("str", OneOf(ROUTING_STRATEGIES)), "modulo")
    # crawlers split by source key, each shard with its own leader
    monitor_shards: int = setting("BLACKWIDOW_MONITOR_SHARDS", Kind("int", Range(1, MAX_SHARDS)), 1)
    # hosts a node may fetch although they are private (the demo's and tests' loopback feeds)
    fetch_allow: frozenset[str] = setting("BLACKWIDOW_FETCH_ALLOW", Kind("hosts"), frozenset())
    # networks node URLs must resolve into; empty: any
    node_networks: tuple[Network, ...] = setting("BLACKWIDOW_NODE_NETWORKS", NETWORKS, ())
    # seconds between polls of one feed (a feed's <ttl> can lengthen it)
    feed_interval: float = setting("BLACKWIDOW_FEED_INTERVAL", SECONDS, 60.0)
    # seconds for a whole response, however slowly it trickles
    fetch_deadline: float = setting("BLACKWIDOW_FETCH_DEADLINE", SECONDS, 20.0)
    # data sources a node registers to run: its weight under weighted routing
    node_capacity: int = setting("BLACKWIDOW_NODE_CAPACITY", COUNT, 100)
    # nodes GET /api/v1/nodes/count desires at least, whatever the crawlers need: redundancy
    min_nodes: int = setting("BLACKWIDOW_MIN_NODES", COUNT, 2)
    # weighted routing: capacity kept spare beyond the data sources, as a fraction of them,
    # when GET /api/v1/nodes/count says how many nodes are desired
    capacity_headroom: float = setting(
        "BLACKWIDOW_CAPACITY_HEADROOM", Kind("float", Range(0, 10)), 0.25
    )
    # set, nodes add every newly stored item to a Redis Stream (a URL may carry a password)
    redis_url: str | None = setting("BLACKWIDOW_REDIS_URL", TEXT, secret=True)
    # entries each crawler's stream keeps, trimmed approximately
    queue_maxlen: int = setting("BLACKWIDOW_QUEUE_MAXLEN", COUNT, 100_000)
    # items a node holds per subscriber, and in its queue outbox
    node_buffer: int = setting("BLACKWIDOW_NODE_BUFFER", COUNT, 5000)
    # a node's queue spool file and run ledger live here, one of each per node address
    outbox_dir: str = setting(
        "BLACKWIDOW_OUTBOX_DIR", TEXT, factory=lambda: str(data_dir() / "outbox")
    )
    # a node's own provider credentials: source -> name -> validated fields (secrets inside)
    credentials: Mapping[str, Mapping[str, dict[str, Any]]] = setting(
        "BLACKWIDOW_CREDENTIALS", Kind("credentials"), factory=dict, secret=True
    )
    # seconds between polls of a recent search
    search_interval: float = setting("BLACKWIDOW_SEARCH_INTERVAL", SECONDS, 60.0)
    # first wait after a provider's 429; doubles while it lasts
    rate_limit_wait: float = setting("BLACKWIDOW_RATE_LIMIT_WAIT", SECONDS, 60.0)
    # a node's fetcher threads, shared by every polled data source: bounded whatever the feeds
    fetchers: int = setting("BLACKWIDOW_FETCHERS", Kind("int", Range(1, MAX_FETCHERS)), 32)
    # a node's worker processes for parsing feeds (sources.fetch.workers), so parses use the
    # host's cores; 0: feeds are parsed in the node's own process, one at a time
    parse_workers: int = setting(
        "BLACKWIDOW_PARSE_WORKERS",
        Kind("int", Range(0, MAX_PARSE_WORKERS)),
        factory=lambda: len(os.sched_getaffinity(0)),
    )
    # fetches in flight at once to one host, per node
    host_concurrency: int = setting("BLACKWIDOW_HOST_CONCURRENCY", COUNT, 2)
    # seconds at least between two fetches starting at one host
    host_gap: float = setting("BLACKWIDOW_HOST_GAP", PAUSE, 0.2)
    # bearer a scrape of /metrics must carry; unset, open
    metrics_token: str | None = setting("BLACKWIDOW_METRICS_TOKEN", TEXT, secret=True)
    # networks scrapes may come from; empty: any
    metrics_networks: tuple[Network, ...] = setting("BLACKWIDOW_METRICS_NETWORKS", NETWORKS, ())
    # prometheus-client's multiprocess directory (its own variable): set, a hub scrape counts
    # the API requests of every gunicorn worker (blackwidow.gunicorn_conf sets it up)
    metrics_dir: str | None = setting("PROMETHEUS_MULTIPROC_DIR", TEXT)
    # the cluster's webhook: every alert event is POSTed here, signed with the secret
    webhook_url: str | None = setting("BLACKWIDOW_WEBHOOK_URL", Kind("http_url"), secret=True)
    webhook_secret: str | None = setting("BLACKWIDOW_WEBHOOK_SECRET", TEXT, secret=True)
    # seconds a data source gets nothing before an alert
    source_failing_after: float = setting("BLACKWIDOW_SOURCE_FAILING_AFTER", SECONDS, 300.0)
    # items a node holds during an outage before an alert
    node_holding_items: int = setting("BLACKWIDOW_NODE_HOLDING_ITEMS", COUNT, 1000)
    # signs the dashboard's session cookie; unset, it is derived from the cluster secret
    session_secret: str | None = setting("BLACKWIDOW_SESSION_SECRET", TEXT, secret=True)
    # mark the session cookie Secure although the hub sees plain http (TLS ends at a proxy)
    session_cookie_secure: bool = setting("BLACKWIDOW_SESSION_COOKIE_SECURE", FLAG, False)
    # a node's seen-set (spawn.pool.seen_set): a Bloom filter per crawler in front of the
    # store's "stored already?" read; off, every id is read
    seen_set: bool = setting("BLACKWIDOW_SEEN_SET", FLAG, True)
    # how every process writes its log lines to stderr: text for people, json (one object a
    # line) for a log pipeline; gunicorn's own lines included (blackwidow.core.logs)
    log_format: str = setting("BLACKWIDOW_LOG_FORMAT", Kind("str", OneOf(LOG_FORMATS)), "text")

    def replace(self, **changes: Any) -> Settings:
        return dataclasses.replace(self, **changes)


class _Environment(Env):
    """environs over one mapping (os.environ, or a test's own), collecting every bad variable
    before it raises (eager=False), with the parsers above."""

    def __init__(self, environ: Mapping[str, str]) -> None:
        super().__init__(eager=False)
        self._given = environ
        for name, field_class in _PARSERS.items():
            self.add_parser_from_field(name, field_class)

    def _get_value(self, env_key: str, default: Any) -> Any:
        """The given mapping in place of os.environ: the hook environs' FileAwareEnv overrides."""
        return self._given.get(env_key, default)

    def read(self, declared: dataclasses.Field[Any]) -> Any:
        """The field's variable, read and checked; its default when unset."""
        kind: Kind = declared.metadata["kind"]
        default = declared.default
        if default is MISSING:
            default = declared.default_factory()  # type: ignore[misc]
        parse = getattr(self, kind.parser)
        return parse(declared.metadata["variable"], default, validate=kind.validate)


def _rules(values: Mapping[str, Any], bad: Mapping[str, str]) -> dict[str, str]:
    """The checks across variables, made only where each variable involved read well."""
    problems = {}
    suspect, dead = values["phi_suspect"], values["phi_dead"]
    if not bad.keys() & {"BLACKWIDOW_PHI_SUSPECT", "BLACKWIDOW_PHI_DEAD"} and suspect > dead:
        problems["BLACKWIDOW_PHI_SUSPECT"] = (
            f"must not exceed BLACKWIDOW_PHI_DEAD ({dead:g}), got {suspect:g}"
        )
    webhook = {"BLACKWIDOW_WEBHOOK_URL", "BLACKWIDOW_WEBHOOK_SECRET"}
    if not bad.keys() & webhook and (values["webhook_url"] is None) != (
        values["webhook_secret"] is None
    ):
        problems["BLACKWIDOW_WEBHOOK_SECRET"] = (
            "BLACKWIDOW_WEBHOOK_URL and BLACKWIDOW_WEBHOOK_SECRET are set together "
            "(every delivery is signed)"
        )
    return problems


def from_env(environ: Mapping[str, str] | None = None) -> Settings:
    """Settings from the environment (os.environ unless given); one SettingsError names every
    bad variable and what is wrong with it."""
    env = _Environment(os.environ if environ is None else environ)
    values = {declared.name: env.read(declared) for declared in dataclasses.fields(Settings)}
    try:
        env.seal()
        bad: dict[str, str] = {}
    except EnvValidationError as error:
        bad = {
            name: "; ".join(map(str, messages)) for name, messages in error.error_messages.items()
        }
    problems = bad | _rules(values, bad)
    if problems:
        raise SettingsError(problems)
    return Settings(**values)


def for_servers(environ: Mapping[str, str] | None = None) -> Settings:
    """Settings a hub or node can serve with: `from_env`'s, and the cluster secret, which every
    hub<->node call carries (a hub without it would answer its nodes 401). Every entry point
    that serves checks this before it binds (blackwidow.core.startup)."""
    environ = os.environ if environ is None else environ
    missing = {}
    if "BLACKWIDOW_CLUSTER_SECRET" not in environ:  # set but blank, from_env names it
        missing["BLACKWIDOW_CLUSTER_SECRET"] = "must be set (hub and nodes share it)"
    try:
        settings = from_env(environ)
    except SettingsError as error:
        raise SettingsError(error.problems | missing) from None
    if missing:
        raise SettingsError(missing)
    return settings


def variables(overrides: Mapping[str, Any]) -> dict[str, str]:
    """A command's options (Settings field names) as the variables they stand for, so they
    are checked as the variables are (`blackwidow hub --db URL`); unset ones left out."""
    named = {
        declared.name: declared.metadata["variable"] for declared in dataclasses.fields(Settings)
    }
    return {named[name]: str(value) for name, value in overrides.items() if value is not None}


def unknown_variables(environ: Mapping[str, str]) -> dict[str, str | None]:
    """Each BLACKWIDOW_* variable set that nothing reads, with the known name nearest to it
    (None when none is near): a misspelt one would otherwise be ignored in silence. Names are
    compared without the prefix, which every one shares."""
    known = {declared.metadata["variable"] for declared in dataclasses.fields(Settings)}
    known |= OTHER_VARIABLES
    suffixes = [name.removeprefix(PREFIX) for name in known if name.startswith(PREFIX)]
    unknown = sorted(name for name in environ if name.startswith(PREFIX) and name not in known)
    found: dict[str, str | None] = {}
    for name in unknown:
        near = difflib.get_close_matches(name.removeprefix(PREFIX), suffixes, n=1)
        found[name] = PREFIX + near[0] if near else None
    return found


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
