"""Registration: a node announces itself to the hub and retries with backoff until it answers;
and, stopping gracefully, says it is leaving and stays until its crawlers are handed on."""

from __future__ import annotations

import logging
import random
import threading
import time
import uuid
from dataclasses import dataclass

import requests

from sources.backoff import Backoff
from spawn.node import NodeState, NotJoined

log = logging.getLogger(__name__)

# A hub that is starting needs a moment; jittered down to half, so nodes restarted together
# do not all knock at the same instant.
RETRY = Backoff(first=0.5, cap=10.0, jitter=0.5)
LEAVE_CHECK_INTERVAL = 0.05  # seconds between looks at whether a leaving node is done


class Refused(requests.HTTPError):
    """The hub answered, and refused the registration: retrying as it is will not help until
    someone fixes what `reason` names (the secret, the advertise URL)."""

    def __init__(self, reason: str, response: requests.Response) -> None:
        super().__init__(reason, response=response)
        self.reason = reason


@dataclass(frozen=True)
class Registration:
    """The hub's answer: the node's id and generation, and the cluster's id (a UUID, which
    names the node's files)."""

    node_id: int
    generation: int
    cluster_id: str


def register_once(hub_url: str, node_url: str, capacity: int, secret: str) -> tuple[int, int]:
    """The node id and generation of one registration call, for a node that keeps no files
    (bench/simulated_nodes.py)."""
    answer = register(hub_url, node_url, capacity, secret)
    return answer.node_id, answer.generation


def register(hub_url: str, node_url: str, capacity: int, secret: str) -> Registration:
    """One registration call; the hub's answer, or an exception (Refused when the hub said
    no; ValueError or KeyError for an answer that is not a registration, such as one of a hub
    older than the cluster id)."""
    response = requests.post(
        f"{hub_url.rstrip('/')}/api/v1/nodes",
        json={"url": node_url, "capacity": capacity},
        headers={"Authorization": f"Bearer {secret}"},
        timeout=5,
        allow_redirects=False,
    )
    if 400 <= response.status_code < 500:
        raise Refused(refusal(response), response)
    response.raise_for_status()
    answer = response.json()
    cluster_id = str(uuid.UUID(answer["cluster_id"]))  # a file name's part: a UUID, nothing else
    return Registration(int(answer["id"]), int(answer["generation"]), cluster_id)


def refusal(response: requests.Response) -> str:
    """Why the hub refused, in its words (docs/node-protocol.md "Registration"). A 401 can
    only mean the secret: a node does not start without one."""
    if response.status_code == 401:
        return "cluster secret does not match the hub's"
    try:
        error = response.json()["error"]
        return f"{error['field']}: {error['message']}" if error.get("field") else error["message"]
    except (ValueError, KeyError, TypeError):
        return f"HTTP {response.status_code}"


def why_unregistered(error: Exception) -> str:
    """One line for a failed attempt, the same for each retry of the same failure (no
    addresses or timings in it), so the node says it once."""
    if isinstance(error, Refused):
        return f"registration refused: {error.reason}"
    if isinstance(error, NotJoined):
        return f"registration not taken up: {error}"
    if isinstance(error, requests.HTTPError) and error.response is not None:
        return f"registration failed: the hub answered HTTP {error.response.status_code}"
    if isinstance(error, requests.RequestException):
        return f"registration failed: the hub does not answer ({type(error).__name__})"
    return f"registration failed: the hub's answer is not a registration ({error!r})"


def keep_registering(
    node: NodeState, hub_url: str, node_url: str, capacity: int, secret: str, stop: threading.Event
) -> None:
    """Loop for the node's lifetime: whenever the node is not registered, register it, having
    joined the hub's cluster first (NodeState.join_cluster). Each reason it is not is logged
    once, as a warning, until it changes or the node registers; /readyz says it meanwhile
    (NodeState.registration_problem)."""
    failures = 0
    said = None
    while not stop.is_set():
        if node.registered.is_set():
            said = None
            stop.wait(0.2)
            continue
        try:
            answer = register(hub_url, node_url, capacity, secret)
            node.join_cluster(answer.cluster_id)  # its files open before any hub call is taken
            node.mark_registered(answer.node_id, answer.generation)
            failures = 0
        except (requests.RequestException, ValueError, KeyError, NotJoined) as error:
            failures += 1
            delay = RETRY.delay(failures, random.random())
            node.registration_problem = reason = why_unregistered(error)
            if reason != said:
                log.warning("%s hub=%s url=%s retry_in=%.1fs", reason, hub_url, node_url, delay)
                said = reason
            stop.wait(delay)


def say_leaving(hub_url: str, node_id: int, generation: int, secret: str) -> None:
    """One leave call: the hub routes nothing more here and moves this node's crawlers off."""
    response = requests.post(
        f"{hub_url.rstrip('/')}/api/v1/nodes/{node_id}/leave",
        json={"generation": generation},
        headers={"Authorization": f"Bearer {secret}"},
        timeout=5,
        allow_redirects=False,
    )
    response.raise_for_status()


def leave(node: NodeState, hub_url: str, secret: str, within: float, silent_after: float) -> bool:
    """Leave the cluster gracefully (docs/node-protocol.md "Leaving"): tell the hub, then keep
    answering its polls until it has moved every crawler off this node and applied their
    final counts, for at most `within` seconds, or until no poll came for `silent_after`
    (the hub stopped too). True once handed on; False when the hub was not told (not
    registered, refused, unreachable) or did not finish, and the hub will find the node
    dead instead, its leases lapsing as a lost node's do."""
    node_id, generation = node.node_id, node.generation
    if not node.registered.is_set() or node_id is None or generation is None:
        return False
    started = time.monotonic()
    try:
        say_leaving(hub_url, node_id, generation, secret)
    except requests.RequestException as error:
        log.warning("leave not accepted hub=%s node=%s error=%s", hub_url, node_id, error)
        return False
    log.info("node leaving node=%s", node_id)
    polls = node.polls
    while time.monotonic() - started < within and node.silent_for() < silent_after:
        # two polls: the first may come of a monitor cycle that read the node set before the
        # hub heard this node was leaving
        if node.polls >= polls + 2 and handed_on(node):
            log.info("node left node=%s after=%.1fs", node_id, time.monotonic() - started)
            return True
        time.sleep(LEAVE_CHECK_INTERVAL)
    subscribers, _ = node.pool.counts()
    log.warning(
        "leave unfinished node=%s after=%.1fs silent_for=%.1fs subscribers=%s departures=%s",
        node_id,
        time.monotonic() - started,
        node.silent_for(),
        subscribers,
        node.pool.departures_waiting(),
    )
    return False


def handed_on(node: NodeState) -> bool:
    """Nothing runs here any more and the hub has applied every stopped run's final counts."""
    subscribers, data_sources = node.pool.counts()
    return subscribers == 0 and data_sources == 0 and node.pool.departures_waiting() == 0
