"""The hub's calls to a node: push, remove and poll subscribers. Thin: no decisions here.

Every call carries the cluster secret and never follows redirects (a node URL must not
become a way to make the hub fetch something else).
"""

from __future__ import annotations

from typing import Any

import requests

from sources.model import SubscriberSpec

ASSIGNED_HEADER = "X-Blackwidow-Assigned"


class NodeUnreachable(Exception):
    """No usable answer: connection error, timeout or a 5xx."""


class NodeRejected(Exception):
    """The node answered 4xx: the spec itself is wrong, so retrying will not help."""


class NodeClient:
    def __init__(self, cluster_secret: str | None, timeout: float) -> None:
        self._session = requests.Session()
        self._session.trust_env = False
        self._session.headers["Authorization"] = f"Bearer {cluster_secret or ''}"
        self._timeout = timeout

    def _call(self, method: str, url: str, **kwargs: Any) -> requests.Response:
        try:
            response = self._session.request(
                method, url, timeout=self._timeout, allow_redirects=False, **kwargs
            )
        except requests.RequestException as error:
            raise NodeUnreachable(str(error)) from error
        if 400 <= response.status_code < 500:
            raise NodeRejected(_reason(response))
        if response.status_code >= 300:
            raise NodeUnreachable(f"HTTP {response.status_code}")
        return response

    def poll(self, node_url: str, assigned: list[int]) -> dict[str, Any]:
        """One GET for all of a node's subscribers; tells the node which ones are still wanted."""
        header = ",".join(str(c) for c in sorted(assigned))
        response = self._call("GET", f"{node_url}/subscribers", headers={ASSIGNED_HEADER: header})
        try:
            return response.json()
        except ValueError as error:
            raise NodeUnreachable("poll answer is not JSON") from error

    def push(self, node_url: str, spec: SubscriberSpec) -> dict[str, Any]:
        response = self._call(
            "PUT", f"{node_url}/subscribers/{spec.crawler_id}", json=spec.to_json()
        )
        return response.json()

    def remove(self, node_url: str, crawler_id: int) -> None:
        self._call("DELETE", f"{node_url}/subscribers/{crawler_id}")


def _reason(response: requests.Response) -> str:
    try:
        return str(response.json()["error"]["message"])
    except (ValueError, KeyError, TypeError):
        return f"HTTP {response.status_code}"
