"""What the hub's and the node's OpenAPI documents say of every operation beyond its view's
decorators, in one place for both: a stable operationId made from its endpoint and method,
and the bearer scheme it asks for. Its summary is its view's docstring (flask-smorest)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from apispec import APISpec, BasePlugin
from werkzeug.routing import Rule

TOKEN = "token"
CLUSTER_SECRET = "cluster"
SCHEMES = {
    TOKEN: "a user's token, or the admin token (BLACKWIDOW_ADMIN_TOKEN)",
    CLUSTER_SECRET: "the cluster secret (BLACKWIDOW_CLUSTER_SECRET) the hub and its nodes share",
}

# (endpoint, METHOD) -> the scheme a call needs, None for an open one
Security = Callable[[str, str], str | None]


def operation_id(endpoint: str, method: str) -> str:
    """`crawlers.CrawlerById` and `get` name `crawlers_crawler_by_id_get`: unique, as Flask's
    endpoints are, and stable while the view keeps its name."""
    words = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", endpoint)
    return re.sub(r"\W+", "_", f"{words}_{method}").lower()


def open_to_all(endpoint: str, method: str) -> str | None:
    return None


class OperationNames(BasePlugin):
    """Names every operation, and gives each the scheme `security` says its endpoint needs
    unless its view's decorators named one; declares each scheme an operation names."""

    def __init__(self, security: Security) -> None:
        self._security = security
        self._spec: APISpec | None = None

    def init_spec(self, spec: APISpec) -> None:
        self._spec = spec

    def operation_helper(
        self,
        path: str | None = None,
        operations: dict[str, Any] | None = None,
        *,
        rule: Rule | None = None,
        **kwargs: Any,
    ) -> None:
        if rule is None or rule.endpoint is None or operations is None:
            return
        for method, operation in operations.items():
            operation.setdefault("operationId", operation_id(rule.endpoint, method))
            scheme = self._security(rule.endpoint, method.upper())
            if scheme is not None:
                operation.setdefault("security", [{scheme: []}])
            for requirement in operation.get("security", ()):
                for name in requirement:
                    self._declare(name)

    def _declare(self, name: str) -> None:
        assert self._spec is not None  # apispec calls init_spec first
        if name not in self._spec.components.security_schemes:
            scheme = {"type": "http", "scheme": "bearer", "description": SCHEMES[name]}
            self._spec.components.security_scheme(name, scheme)
