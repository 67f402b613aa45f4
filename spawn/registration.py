"""Registration: a node announces itself to the hub and retries with backoff until it answers."""

from __future__ import annotations

import logging
import random
import threading

import requests

from sources.backoff import Backoff
from spawn.node import NodeState

log = logging.getLogger(__name__)

# A hub that is starting needs a moment; jittered down to half, so nodes restarted together
# do not all knock at the same instant.
RETRY = Backoff(first=0.5, cap=10.0, jitter=0.5)


def register_once(hub_url: str, node_url: str, capacity: int, secret: str) -> tuple[int, int]:
    """One registration call; the hub's node id and generation, or an exception."""
    response = requests.post(
        f"{hub_url.rstrip('/')}/api/v1/nodes",
        json={"url": node_url, "capacity": capacity},
        headers={"Authorization": f"Bearer {secret}"},
        timeout=5,
        allow_redirects=False,
    )
    response.raise_for_status()
    answer = response.json()
    return int(answer["id"]), int(answer["generation"])


def keep_registering(
    node: NodeState, hub_url: str, node_url: str, capacity: int, secret: str, stop: threading.Event
) -> None:
    """Loop for the node's lifetime: whenever the node is not registered, register it."""
    failures = 0
    while not stop.is_set():
        if node.registered.is_set():
            stop.wait(0.2)
            continue
        try:
            node.mark_registered(*register_once(hub_url, node_url, capacity, secret))
            failures = 0
        except (requests.RequestException, ValueError, KeyError) as error:
            failures += 1
            delay = RETRY.delay(failures, random.random())
            log.warning("registration failed hub=%s retry_in=%.1fs error=%s", hub_url, delay, error)
            stop.wait(delay)
