"""The key resolver (seed 004): one key per address, so a link decorated for tracking, a JSONP
callback or a cache-buster is the same item as the bare link.

Pure. A crawler may drop more query parameters, or keep some of the defaults, with the RSS
query's `url_keys: {"drop": [...], "keep": [...]}`; the rules are part of its source key, as
they change the ids its data source gives.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from sources.urls import canonical_url

# Parameters that never change what a link points at: click tracking, JSONP callbacks and
# cache-busters. Names compare lower-case; a name ending in `*` is a prefix.
DROPPED_BY_DEFAULT = frozenset(
    {
        *("utm_*", "fbclid", "gclid", "dclid", "gbraid", "wbraid", "msclkid", "yclid"),
        *("mc_cid", "mc_eid", "_hsenc", "_hsmi", "mkt_tok", "igshid", "ref_src"),
        *("callback", "jsonp", "jsoncallback"),
        *("_", "cb", "cachebuster", "cache_buster", "nocache", "no_cache", "timestamp", "ts"),
    }
)


@dataclass(frozen=True)
class UrlKeys:
    """Which query parameters a crawler's keys drop: the defaults plus `drop`, less `keep`."""

    drop: frozenset[str] = frozenset()
    keep: frozenset[str] = frozenset()

    @classmethod
    def of(cls, query: Mapping[str, Any]) -> UrlKeys:
        """The rules of a validated query (none given: the defaults)."""
        rules = query.get("url_keys") or {}
        return cls(_lowered(rules.get("drop", ())), _lowered(rules.get("keep", ())))

    @functools.cached_property
    def _patterns(self) -> tuple[frozenset[str], tuple[str, ...]]:
        """The names dropped, and the prefixes: worked out once per set of rules, not per
        parameter of every link."""
        patterns = (DROPPED_BY_DEFAULT - self.keep) | self.drop
        names = frozenset(p for p in patterns if not p.endswith("*"))
        return names, tuple(p[:-1] for p in patterns if p.endswith("*"))

    def dropped(self, name: str) -> bool:
        lowered = name.lower()
        if lowered in self.keep:
            return False
        names, prefixes = self._patterns
        return lowered in names or lowered.startswith(prefixes)


DEFAULT_KEYS = UrlKeys()


def resolved_url(url: str, keys: UrlKeys = DEFAULT_KEYS) -> str:
    """The key of a URL: its canonical form (sources.urls) without the dropped parameters,
    the rest sorted by name then value, so parameter order does not make a new item.

    Raises ValueError for a URL that cannot be normalised (a nonsense port)."""
    canonical = canonical_url(url)
    parts = urlsplit(canonical)
    pairs = parse_qsl(parts.query, keep_blank_values=True)
    kept = sorted((name, value) for name, value in pairs if not keys.dropped(name))
    return urlunsplit(parts._replace(query=urlencode(kept)))


def key_rules(query: Mapping[str, Any]) -> dict[str, list[str]]:
    """The rules as they go into a source key: sorted, lower-case; {} for the defaults, so a
    crawler without rules keeps the key it always had."""
    keys = UrlKeys.of(query)
    rules = {"drop": sorted(keys.drop), "keep": sorted(keys.keep)}
    return {name: names for name, names in rules.items() if names}


def _lowered(names: Iterable[str]) -> frozenset[str]:
    return frozenset(name.lower() for name in names)
