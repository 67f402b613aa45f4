"""Settings: the only place that reads the environment, once, checking each value and its unit.

Durations are seconds everywhere. Secrets are kept out of repr so they never reach logs.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

ROUTING_STRATEGIES = ("modulo", "rendezvous")


class SettingsError(ValueError):
    """A bad environment value; `name` is the variable to fix."""

    def __init__(self, name: str, message: str) -> None:
        super().__init__(f"{name}: {message}")
        self.name = name


@dataclass(frozen=True)
class Settings:
    database_url: str = "sqlite:///blackwidow.db"
    store_url: str = "sqlite:///blackwidow-items.db"
    admin_token: str | None = field(default=None, repr=False)
    cluster_secret: str | None = field(default=None, repr=False)
    poll_interval: float = 2.0
    node_dead_after: float = 10.0
    orphan_after: float = 30.0
    detach_after: float = 60.0
    routing: str = "modulo"
    fetch_allow: frozenset[str] = frozenset()
    feed_interval: float = 60.0
    node_capacity: int = 100
    redis_url: str | None = field(default=None, repr=False)
    queue_maxlen: int = 100_000  # entries each crawler's stream keeps, trimmed approximately
    node_buffer: int = 5000  # items a node holds per subscriber, and in its queue outbox

    def replace(self, **changes: Any) -> Settings:
        return dataclasses.replace(self, **changes)


def _seconds(name: str, raw: str) -> float:
    try:
        value = float(raw)
    except ValueError:
        raise SettingsError(name, f"expected seconds, got {raw!r}") from None
    if not value > 0:
        raise SettingsError(name, f"must be more than 0 seconds, got {raw!r}")
    return value


def _positive_int(name: str, raw: str) -> int:
    try:
        value = int(raw)
    except ValueError:
        raise SettingsError(name, f"expected a whole number, got {raw!r}") from None
    if value < 1:
        raise SettingsError(name, f"must be at least 1, got {raw!r}")
    return value


def _choice(name: str, raw: str) -> str:
    if raw not in ROUTING_STRATEGIES:
        raise SettingsError(name, f"expected one of {', '.join(ROUTING_STRATEGIES)}, got {raw!r}")
    return raw


def _hosts(name: str, raw: str) -> frozenset[str]:
    return frozenset(h.strip().lower() for h in raw.split(",") if h.strip())


def _text(name: str, raw: str) -> str:
    if not raw.strip():
        raise SettingsError(name, "must not be empty")
    return raw


# environment variable -> (settings field, parser)
_VARIABLES = {
    "BLACKWIDOW_DATABASE_URL": ("database_url", _text),
    "BLACKWIDOW_STORE": ("store_url", _text),
    "BLACKWIDOW_ADMIN_TOKEN": ("admin_token", _text),
    "BLACKWIDOW_CLUSTER_SECRET": ("cluster_secret", _text),
    "BLACKWIDOW_POLL_INTERVAL": ("poll_interval", _seconds),
    "BLACKWIDOW_NODE_DEAD_AFTER": ("node_dead_after", _seconds),
    "BLACKWIDOW_ORPHAN_AFTER": ("orphan_after", _seconds),
    "BLACKWIDOW_DETACH_AFTER": ("detach_after", _seconds),
    "BLACKWIDOW_ROUTING": ("routing", _choice),
    "BLACKWIDOW_FETCH_ALLOW": ("fetch_allow", _hosts),
    "BLACKWIDOW_FEED_INTERVAL": ("feed_interval", _seconds),
    "BLACKWIDOW_NODE_CAPACITY": ("node_capacity", _positive_int),
    "BLACKWIDOW_REDIS_URL": ("redis_url", _text),
    "BLACKWIDOW_QUEUE_MAXLEN": ("queue_maxlen", _positive_int),
    "BLACKWIDOW_NODE_BUFFER": ("node_buffer", _positive_int),
}


def from_env(environ: Mapping[str, str] | None = None) -> Settings:
    """Build settings from the environment; raise SettingsError naming the bad variable."""
    environ = os.environ if environ is None else environ
    values = {
        attribute: parse(name, environ[name])
        for name, (attribute, parse) in _VARIABLES.items()
        if name in environ
    }
    return Settings(**values)
