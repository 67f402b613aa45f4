"""`GET /metrics` for hub and nodes: Prometheus' text format, written by prometheus-client,
behind an optional bearer token and list of networks (both unset: open, as Miniflux does)."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field

from flask import Flask, Response, request
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from blackwidow.core.errors import ApiError
from blackwidow.core.settings import Network, Settings
from blackwidow.core.tokens import bearer, same_secret

ENDPOINT = "metrics"


@dataclass(frozen=True)
class MetricsAccess:
    """Who may scrape: callers from `networks` (any when empty) holding `token` (any when None)."""

    token: str | None = field(default=None, repr=False)
    networks: tuple[Network, ...] = ()

    @classmethod
    def of(cls, settings: Settings) -> MetricsAccess:
        return cls(settings.metrics_token, settings.metrics_networks)

    def check(self, remote_addr: str | None, authorization: str | None) -> None:
        """Raise the 403 for a caller outside the networks, then the 401 without the token."""
        if self.networks and not _within(remote_addr, self.networks):
            raise ApiError(403, "forbidden", "metrics are not served to this address")
        if self.token is not None and not same_secret(bearer(authorization), self.token):
            raise ApiError(401, "unauthorized", "metrics token required", "Authorization")


def _within(address: str | None, networks: tuple[Network, ...]) -> bool:
    try:
        ip = ipaddress.ip_address((address or "").split("%", 1)[0])
    except ValueError:
        return False
    return any(ip in network for network in networks)


def serve_metrics(app: Flask, registry: CollectorRegistry, access: MetricsAccess) -> None:
    """Add `GET /metrics` to an app: the registry's figures, for the callers `access` admits."""

    def metrics() -> Response:
        access.check(request.remote_addr, request.headers.get("Authorization"))
        return Response(generate_latest(registry), mimetype=None, content_type=CONTENT_TYPE_LATEST)

    app.add_url_rule("/metrics", ENDPOINT, metrics, methods=["GET"])
