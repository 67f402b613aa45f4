"""BLACKWIDOW_STORE=cassandra://host1,host2[:port]/keyspace[?options] as a typed config.

Options: `consistency` (a CQL consistency level; LOCAL_QUORUM by default, ONE suits a single
dev node), `replication` (`3` for SimpleStrategy with that factor, or `dc1:3,dc2:2` for
NetworkTopologyStrategy; 1 by default), `connect_timeout` (seconds to open a connection) and
`request_timeout` (seconds a statement waits for its answer before the caller is told the store
did not answer; the write may have run, and is retried whole), and `search` (`on` to write
items with their words and let `blackwidow db upgrade` index them, for `GET /api/v1/items?q=`;
`off` by default: the server pays about 1.1x of search off per item, but cutting the words costs
the node about 1.7x of its CPU per item, bench/README.md#search).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import parse_qsl

from cassandra import ConsistencyLevel

DEFAULT_PORT = 9042
_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,47}")  # CQL's unquoted identifier rule


@dataclass(frozen=True)
class CassandraConfig:
    hosts: tuple[str, ...]
    port: int
    keyspace: str
    consistency: int = ConsistencyLevel.LOCAL_QUORUM
    replication: tuple[tuple[str, int], ...] = (("replication_factor", 1),)
    connect_timeout: float = 5.0
    request_timeout: float = 5.0  # short: an outage fails fast and the caller retries
    search: bool = False  # items carry their words and the keyspace indexes them

    @property
    def strategy(self) -> str:
        simple = self.replication[0][0] == "replication_factor"
        return "SimpleStrategy" if simple else "NetworkTopologyStrategy"

    def replication_cql(self) -> str:
        """The keyspace's replication map as CQL, e.g. {'class': 'SimpleStrategy', ...}."""
        pairs = [f"'class': '{self.strategy}'"] + [f"'{k}': '{v}'" for k, v in self.replication]
        return "{" + ", ".join(pairs) + "}"

    def replication_map(self) -> dict[str, str]:
        """What system_schema.keyspaces shows for this replication, to spot a change."""
        strategy = {"class": f"org.apache.cassandra.locator.{self.strategy}"}
        return strategy | {k: str(v) for k, v in self.replication}


def parse(rest: str) -> CassandraConfig:
    """Parse what follows `cassandra://`; ValueError says which part is wrong."""
    location, _, query = rest.partition("?")
    hosts_part, slash, keyspace = location.partition("/")
    if not slash or not _NAME.fullmatch(keyspace):
        raise ValueError("needs a keyspace name after the hosts (letters, digits, _)")
    hosts, port = _hosts(hosts_part)
    options = dict(parse_qsl(query, keep_blank_values=True, strict_parsing=bool(query)))
    unknown = sorted(set(options) - set(_PARSERS))
    if unknown:
        raise ValueError(f"unknown option {unknown[0]!r}; known: {', '.join(_PARSERS)}")
    chosen = {name: _PARSERS[name](value) for name, value in options.items()}
    return CassandraConfig(hosts=hosts, port=port, keyspace=keyspace, **chosen)


def _hosts(text: str) -> tuple[tuple[str, ...], int]:
    """Hosts share one port (the driver's rule): `a,b:9043` or `a:9043,b:9043`."""
    hosts, ports = [], set()
    for entry in text.split(","):
        host, colon, port = entry.strip().rpartition(":") if ":" in entry else (entry, "", "")
        host = host.strip()
        if not host:
            raise ValueError("needs at least one host, e.g. cassandra://127.0.0.1/blackwidow")
        if colon:
            if not port.isdigit() or not 0 < int(port) < 65536:
                raise ValueError(f"bad port {port!r}")
            ports.add(int(port))
        hosts.append(host)
    if len(ports) > 1:
        raise ValueError("every host must use the same port")
    return tuple(hosts), ports.pop() if ports else DEFAULT_PORT


def _switch(name: str, text: str) -> bool:
    if text not in ("on", "off"):
        raise ValueError(f"{name} {text!r}: use on or off")
    return text == "on"


def _consistency(name: str) -> int:
    level = ConsistencyLevel.name_to_value.get(name.upper())
    if level is None:
        known = ", ".join(sorted(ConsistencyLevel.name_to_value))
        raise ValueError(f"consistency {name!r} is not one of {known}")
    return level


def _replication(text: str) -> tuple[tuple[str, int], ...]:
    if text.isdigit():
        return (("replication_factor", _factor(text)),)
    pairs = []
    for entry in text.split(","):
        dc, colon, factor = entry.partition(":")
        if not colon or not _NAME.fullmatch(dc):
            raise ValueError(f"replication {text!r}: use a factor (3) or dc:factor pairs (dc1:3)")
        pairs.append((dc, _factor(factor)))
    return tuple(pairs)


def _factor(text: str) -> int:
    if not text.isdigit() or not 1 <= int(text) <= 20:
        raise ValueError(f"replication factor {text!r} must be a whole number from 1 to 20")
    return int(text)


def _seconds(name: str) -> Callable[[str], float]:
    def parsed(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = 0.0
        if not value > 0:
            raise ValueError(f"{name} {text!r} must be a positive number of seconds")
        return value

    return parsed


_PARSERS = {
    "consistency": _consistency,
    "replication": _replication,
    "connect_timeout": _seconds("connect_timeout"),
    "request_timeout": _seconds("request_timeout"),
    "search": lambda text: _switch("search", text),
}
