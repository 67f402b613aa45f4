"""The hub's calls to a node: push, remove and poll subscribers. Thin: no decisions here.

Every call carries the cluster secret and the node's generation, and never follows redirects
(a node URL must not become a way to make the hub fetch something else). With node networks
configured, the address each connection reaches is checked too.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import requests

from blackwidow import node_networks
from blackwidow.node_protocol import ASSIGNED_HEADER, GENERATION_HEADER
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


class NodeClient:
    def __init__(
        self,
        cluster_secret: str | None,
        timeout: float,
        networks: tuple[node_networks.Network, ...] = (),
    ) -> None:
        self._session = requests.Session()
        self._session.trust_env = False
        self._session.headers["Authorization"] = f"Bearer {cluster_secret or ''}"
        if networks:
            adapter = peer_checked_adapter(
                lambda host, address: node_networks.refusal(host, [address], networks)
            )
            self._session.mount("http://", adapter)
            self._session.mount("https://", adapter)
        self._timeout = timeout

    def _call(self, method: str, node: NodeTarget, path: str, **kwargs: Any) -> requests.Response:
        headers = {GENERATION_HEADER: str(node.generation), **kwargs.pop("headers", {})}
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

    def poll(self, node: NodeTarget, assigned: list[int]) -> dict[str, Any]:
        """One GET for all of a node's subscribers; tells the node which ones are still wanted."""
        header = ",".join(str(c) for c in sorted(assigned))
        response = self._call("GET", node, "/subscribers", headers={ASSIGNED_HEADER: header})
        try:
            return response.json()
        except ValueError as error:
            raise NodeUnreachable("poll answer is not JSON") from error

    def push(self, node: NodeTarget, spec: SubscriberSpec) -> dict[str, Any]:
        response = self._call("PUT", node, f"/subscribers/{spec.crawler_id}", json=spec.to_json())
        return response.json()

    def remove(self, node: NodeTarget, crawler_id: int) -> None:
        self._call("DELETE", node, f"/subscribers/{crawler_id}")


def _reason(response: requests.Response) -> str:
    try:
        return str(response.json()["error"]["message"])
    except (ValueError, KeyError, TypeError):
        return f"HTTP {response.status_code}"
