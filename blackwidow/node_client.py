"""The hub's calls to a node: push, remove and poll subscribers, and the call back that checks
a registering node's URL. Thin: no decisions here.

Every call carries the cluster secret, the node's generation, and the calling monitor's
shard and lock epoch, and never follows redirects (a node URL must not become a way to make
the hub fetch something else). With node networks configured, the address each connection
reaches is checked too. Pushes and removals travel in batches, answered per crawler.

It speaks urllib3 directly, keeping a connection open to every node: a hub polls a thousand
nodes every two seconds, and requests' layers above urllib3 would double the CPU per poll.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import urllib3

from blackwidow.core import node_networks, node_schemas
from blackwidow.core.node_protocol import (
    ALL,
    EPOCH_HEADER,
    GENERATION_HEADER,
    RENEWAL_HEADER,
    SHARD_HEADER,
    SINCE_HEADER,
    Cursor,
    Renewal,
    Shard,
)
from sources.fetch.errors import FetchError
from sources.fetch.guard import peer_checked_pools
from sources.model import SubscriberSpec

# specs or ids per batch call: half of what a node accepts
MAX_BATCH = node_schemas.MAX_BATCH // 2
KEPT_CONNECTIONS = 4096  # nodes whose keep-alive connections stay open between cycles
CALLS_AT_ONCE_PER_NODE = 4  # connections kept per node: a poll and pushes may overlap
SECONDS_PER_SPEC = 0.01  # a batch's answer may take this much longer per spec it carries
# seconds a registering node has to answer the hub's call back: well within the node's own
# wait for the registration's answer (spawn.registration)
CALLBACK_TIMEOUT = 3.0


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
    """The node is in another generation (or heard a newer leader) than the call: one of the
    two is out of date, so this cycle has no usable answer from it."""


class NodeClient:
    def __init__(
        self,
        cluster_secret: str | None,
        timeout: float,
        networks: tuple[node_networks.Network, ...] = (),
        shard: Shard = ALL,
    ) -> None:
        self._http = urllib3.PoolManager(
            num_pools=KEPT_CONNECTIONS, maxsize=CALLS_AT_ONCE_PER_NODE, retries=False
        )
        if networks:
            self._http.pool_classes_by_scheme = peer_checked_pools(  # type: ignore[assignment]
                lambda host, address: node_networks.refusal(host, [address], networks)
            )
        self._secret = cluster_secret or ""
        self._timeout = timeout
        self.shard = shard
        self.epoch: int | None = None  # the lock epoch of the leadership calling

    def _call(
        self,
        method: str,
        node: NodeTarget,
        path: str,
        body: Any = None,
        headers: dict[str, str] | None = None,
        entries: int = 0,
    ) -> Any:
        """The call's JSON answer (None for an empty one). A batch of `entries` gets longer
        to answer: a node starts a data source per new spec, and a timed-out batch is sent
        again whole."""
        sent = {
            "Authorization": f"Bearer {self._secret}",
            GENERATION_HEADER: str(node.generation),
            SHARD_HEADER: str(self.shard),
            **({EPOCH_HEADER: str(self.epoch)} if self.epoch is not None else {}),
            **(headers or {}),
        }
        payload = None
        if body is not None:
            payload = json.dumps(body).encode()
            sent["Content-Type"] = "application/json"
        try:
            response = self._http.request(
                method,
                f"{node.url}{path}",
                body=payload,
                headers=sent,
                timeout=self._timeout + SECONDS_PER_SPEC * entries,
                redirect=False,
            )
        except (urllib3.exceptions.HTTPError, OSError, FetchError) as error:
            raise NodeUnreachable(str(error)) from error
        status = response.status
        if status == 409:
            raise NodeStale(_reason(response.data, status))
        if 400 <= status < 500:
            raise NodeRejected(_reason(response.data, status))
        if status >= 300:
            raise NodeUnreachable(f"HTTP {status}")
        if not response.data:
            return None
        try:
            return json.loads(response.data)
        except ValueError as error:
            raise NodeUnreachable("answer is not JSON") from error

    def poll(
        self, node: NodeTarget, since: Cursor | None, renewal: Renewal | None = None
    ) -> dict[str, Any]:
        """One GET for what changed in a node's subscribers since the cursor (all, without one).

        The node takes the cursor as the hub's word that it still wants every subscriber it
        had reported by then (the ones it does not want, it removes), and the renewal as
        the hub's word that it received that answer (its leases stay in force from then).
        """
        headers = {SINCE_HEADER: str(since)} if since is not None else {}
        if renewal is not None:
            headers[RENEWAL_HEADER] = str(renewal)
        return self._call("GET", node, "/subscribers", headers=headers)

    def subscriber(self, node: NodeTarget, crawler_id: int) -> dict[str, Any] | None:
        """One subscriber's status with its feeds' health; None when the node has no such
        subscriber."""
        try:
            return self._call("GET", node, f"/subscribers/{crawler_id}")
        except NodeRejected:
            return None

    def push_many(self, node: NodeTarget, specs: list[SubscriberSpec]) -> dict[int, dict]:
        """crawler id -> {"status": ...} or {"error": ...}, for every spec, in batches."""
        results: dict[int, dict] = {}
        for start in range(0, len(specs), MAX_BATCH):
            batch = specs[start : start + MAX_BATCH]
            body = {"subscribers": [s.to_json() for s in batch]}
            answer = self._call("PUT", node, "/subscribers", body, entries=len(batch))
            results.update({int(c): r for c, r in answer["results"].items()})
        return results

    def remove_many(
        self, node: NodeTarget, crawler_ids: list[int]
    ) -> tuple[dict[int, int], set[int]]:
        """Remove in batches: crawler id -> its final count, where the node knew it, and the
        crawlers it removed without one (a write of theirs still in progress)."""
        counts: dict[int, int] = {}
        uncounted: set[int] = set()
        for start in range(0, len(crawler_ids), MAX_BATCH):
            batch = crawler_ids[start : start + MAX_BATCH]
            body = {"crawler_ids": batch}
            answer = self._call("DELETE", node, "/subscribers", body, entries=len(batch))
            known = {int(c): int(n) for c, n in (answer.get("counts") or {}).items()}
            counts.update(known)
            uncounted.update(int(c) for c in answer.get("removed") or () if int(c) not in known)
        return counts, uncounted


def unreachable_because(
    url: str, networks: tuple[node_networks.Network, ...] = (), timeout: float = CALLBACK_TIMEOUT
) -> str | None:
    """Why the hub cannot reach a node at `url`, or None when it can: one `GET /healthz`
    (open, so the secret is not sent to a URL not yet known to be a node) under the rules
    polls follow, answered by a node. A registration asks it first, so a wrong advertise URL
    is refused with this reason rather than registered and then declared dead."""
    http = urllib3.PoolManager(retries=False)
    if networks:
        http.pool_classes_by_scheme = peer_checked_pools(  # type: ignore[assignment]
            lambda host, address: node_networks.refusal(host, [address], networks)
        )
    try:
        response = http.request("GET", f"{url}/healthz", timeout=timeout, redirect=False)
    except (urllib3.exceptions.HTTPError, OSError, FetchError) as error:
        # urllib3 opens with the pool's repr ("HTTPConnection(host=..., port=...): ...")
        return str(error).split("): ", 1)[-1] or type(error).__name__
    finally:
        http.clear()
    if response.status != 200:
        return f"GET /healthz answered HTTP {response.status}"
    try:
        role = json.loads(response.data).get("role")
    except (ValueError, AttributeError):
        role = None
    if role != "node":
        return "GET /healthz did not answer as a Black Widow node"
    return None


def _reason(data: bytes, status: int) -> str:
    try:
        return str(json.loads(data)["error"]["message"])
    except (ValueError, KeyError, TypeError):
        return f"HTTP {status}"
