"""Analysts at work: client threads creating RSS crawlers through the hub's REST API.

Each thread is one user (made with the admin token) creating crawlers on its own feed,
`https://feedN.example/rss` (the hub never fetches them), one per call or, with `batch`, that
many per call to `POST /api/v1/crawlers/batch`. The rate is timed overall and in the
first and last tenth, so a hub that slows as its tables grow shows it; every call is timed
(p50, p90, p99 and the longest); every answer other than 201 is counted, and 5xx answers and
lost connections are retried (each try timed and counted on its own).
"""

from __future__ import annotations

import itertools
import threading
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

import requests


class Creator:
    """Client threads creating crawlers through the REST API, as analysts would."""

    def __init__(
        self,
        hub_urls: list[str],
        admin_token: str,
        clients: int,
        total: int,
        batch: int = 0,
        name: str = "bench",
    ) -> None:
        self.name = name  # users are named after it: each Creator of a run needs its own
        self.hub_urls = hub_urls
        self.batch = batch
        self.admin_token = admin_token
        self.clients = clients
        self.total = total
        self.ids: list[int] = []
        self.done_at: list[float] = []
        self.failures: Counter[str] = Counter()
        self.latencies: list[float] = []  # seconds, one per call made (retries included)
        self._next = itertools.count()
        self.alive: Callable[[], bool] = lambda: True  # False once the hub is gone: stop
        self._lock = threading.Lock()

    def run(self) -> dict[str, float | None]:
        threads = [
            threading.Thread(target=self._client, args=(n,), daemon=True)
            for n in range(self.clients)
        ]
        started = time.monotonic()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        done = sorted(self.done_at)
        if len(done) < 10:
            return {}
        tenth = len(done) // 10
        return {
            "create_rate": len(done) / (done[-1] - started),
            "create_rate_first": _rate(tenth, done[tenth - 1] - started),
            "create_rate_last": _rate(tenth, done[-1] - done[-tenth - 1]),
            **latency_figures(self.latencies),
            "create_not_2xx": sum(self.failures.values()),
        }

    def _client(self, n: int) -> None:
        http = requests.Session()
        http.trust_env = False
        hub = self.hub_urls[n % len(self.hub_urls)]
        user = self._call(
            http, f"{hub}/api/v1/users", self.admin_token, {"name": f"{self.name}-user-{n}"}
        )
        if user is None:
            return
        while self.alive():
            indexes = self._take()
            if not indexes:
                return
            bodies = [
                {
                    "name": f"crawler {index}",
                    "source": "rss",
                    "query": {"feeds": [f"https://feed{index}.example/rss"]},
                }
                for index in indexes
            ]
            if self.batch:
                made = self._call(
                    http, f"{hub}/api/v1/crawlers/batch", user["token"], {"crawlers": bodies}
                )
                created = made["crawlers"] if made is not None else []
            else:
                made = self._call(http, f"{hub}/api/v1/crawlers", user["token"], bodies[0])
                created = [made] if made is not None else []
            with self._lock:
                self.ids.extend(crawler["id"] for crawler in created)
                self.done_at.extend([time.monotonic()] * len(created))

    def _take(self) -> list[int]:
        """The next indexes to create: one, or a batch."""
        with self._lock:
            indexes = [next(self._next) for _ in range(max(1, self.batch))]
        return [index for index in indexes if index < self.total]

    def _call(
        self, http: requests.Session, url: str, token: str, body: dict[str, Any]
    ) -> dict[str, Any] | None:
        """A POST retried on 5xx and lost connections (each one counted), up to ten times."""
        for _ in range(10):
            if not self.alive():
                return None
            asked_at = time.monotonic()
            try:
                response = http.post(
                    url, json=body, headers={"Authorization": f"Bearer {token}"}, timeout=60
                )
            except requests.RequestException as error:
                self._timed(asked_at)
                self._failed(type(error).__name__)
                time.sleep(0.5)
                continue
            self._timed(asked_at)
            if response.status_code == 201:
                return response.json()
            self._failed(str(response.status_code))
            if response.status_code < 500:
                return None
            time.sleep(float(response.headers.get("Retry-After", "0.5")))
        return None

    def _timed(self, asked_at: float) -> None:
        took = time.monotonic() - asked_at
        with self._lock:
            self.latencies.append(took)

    def _failed(self, what: str) -> None:
        with self._lock:
            self.failures[what] += 1


def _rate(count: int, seconds: float) -> float | None:
    """None when the span is one batch's answer: too few calls to time a tenth."""
    return count / seconds if seconds > 0 else None


def latency_figures(latencies: list[float]) -> dict[str, float]:
    """A call's time in ms: median, 90th and 99th percentiles, and the longest."""
    if not latencies:
        return {}
    ordered = sorted(latencies)

    def at(share: float) -> float:
        return 1000 * ordered[min(len(ordered) - 1, int(share * len(ordered)))]

    return {
        "create_p50_ms": at(0.50),
        "create_p90_ms": at(0.90),
        "create_p99_ms": at(0.99),
        "create_max_ms": 1000 * ordered[-1],
    }
