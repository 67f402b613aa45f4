"""The hub's calls to a node: push, remove and poll subscribers. Thin: no decisions here.

Every call carries the cluster secret, the node's generation, and the calling monitor's
shard and lock epoch, and never follows redirects (a node URL must not become a way to make
the hub fetch something else). With node networks configured, the address each connection
reaches is checked too. Pushes and removals travel in batches, answered per crawler.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import requests
from requests.adapters import HTTPAdapter

from blackwidow import node_networks
from blackwidow.node_protocol import (
    ALL,
    EPOCH_HEADER,
    GENERATION_HEADER,
    SHARD_HEADER,
    SINCE_HEADER,
    Cursor,
    Shard,
)
from sources.fetcher import FetchError, peer_checked_adapter
from sources.model import SubscriberSpec


@dataclass(frozen=True)
class NodeTarget:
    """A node as one cycle addresses it: the generation read at the start of the cycle."""

    id: int
    url: str
    generation: int


class NodeUnreachable(Exception):
    """No usable answer: connection error, timeout, a redirect or a 5xx."""


class NodeRejected(Exception):
    """The node answered 4xx: the spec itself is wrong, so retrying will not help."""


class NodeStale(NodeUnreachable):
    """The node is in another generation than the call: one of the two is out of date, so
    this cycle has no usable answer from it."""


MAX_BATCH = 500  # specs or ids per batch call; a node accepts up to 1,000
KEPT_CONNECTIONS = 4096  # nodes whose keep-alive connections stay open between cycles


class NodeClient:
    def __init__(
        self,
        cluster_secret: str | None,
        timeout: float,
        networks: tuple[node_networks.Network, ...] = (),
        shard: Shard = ALL,
    ) -> None:
        self._session = requests.Session()
        self._session.trust_env = False
        self._session.headers["Authorization"] = f"Bearer {cluster_secret or ''}"
        if networks:
            adapter = peer_checked_adapter(
                lambda host, address: node_networks.refusal(host, [address], networks),
                kept_hosts=KEPT_CONNECTIONS,
            )
        else:
            adapter = HTTPAdapter(pool_connections=KEPT_CONNECTIONS, max_retries=0)
        self._session.mount("http://", adapter)
        self._session.mount("https://", adapter)
        self._timeout = timeout
        self.shard = shard
        self.epoch: int | None = None  # the lock epoch of the leadership calling

    def _call(self, method: str, node: NodeTarget, path: str, **kwargs: Any) -> requests.Response:
        headers = {
            GENERATION_HEADER: str(node.generation),
            SHARD_HEADER: str(self.shard),
            **({EPOCH_HEADER: str(self.epoch)} if self.epoch is not None else {}),
            **kwargs.pop("headers", {}),
        }
        try:
            response = self._session.request(
                method,
                f"{node.url}{path}",
                headers=headers,
                timeout=self._timeout,
                allow_redirects=False,
                **kwargs,
            )
        except (requests.RequestException, FetchError) as error:
            raise NodeUnreachable(str(error)) from error
        if response.status_code == 409:
            raise NodeStale(_reason(response))
        if 400 <= response.status_code < 500:
            raise NodeRejected(_reason(response))
        if response.status_code >= 300:
            raise NodeUnreachable(f"HTTP {response.status_code}")
        return response

    def poll(self, node: NodeTarget, since: Cursor | None) -> dict[str, Any]:
        """One GET for what changed in a node's subscribers since the cursor (all, without one).

        The node takes the cursor as the hub's word that it still wants every subscriber it
        had reported by then (the ones it does not want, it removes).
        """
        headers = {SINCE_HEADER: str(since)} if since is not None else {}
        return _json(self._call("GET", node, "/subscribers", headers=headers))

    def push_many(self, node: NodeTarget, specs: list[SubscriberSpec]) -> dict[int, dict]:
        """crawler id -> {"status": ...} or {"error": ...}, for every spec, in batches."""
        results: dict[int, dict] = {}
        for start in range(0, len(specs), MAX_BATCH):
            body = {"subscribers": [s.to_json() for s in specs[start : start + MAX_BATCH]]}
            answer = _json(self._call("PUT", node, "/subscribers", json=body))
            results.update({int(c): r for c, r in answer["results"].items()})
        return results

    def remove_many(self, node: NodeTarget, crawler_ids: list[int]) -> None:
        for start in range(0, len(crawler_ids), MAX_BATCH):
            body = {"crawler_ids": crawler_ids[start : start + MAX_BATCH]}
            self._call("DELETE", node, "/subscribers", json=body)


def _json(response: requests.Response) -> Any:
    try:
        return response.json()
    except ValueError as error:
        raise NodeUnreachable("answer is not JSON") from error


def _reason(response: requests.Response) -> str:
    try:
        return str(response.json()["error"]["message"])
    except (ValueError, KeyError, TypeError):
        return f"HTTP {response.status_code}"
