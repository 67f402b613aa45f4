"""Recovery on loopback: node death under the phi-accrual detector, hub restarts, leader takeover.

Every figure measured here goes to the run's "measurements" section.
"""

from __future__ import annotations

import signal
import sqlite3
import time
from collections.abc import Callable
from typing import Any

import requests

from tests.integration.conftest import Cluster, post_numbers
from tests.summary import MEASUREMENTS
from tests.support import wait_until

ONE_SECOND_POLLS = {
    "BLACKWIDOW_POLL_INTERVAL": "1",
    "BLACKWIDOW_ACCEPTABLE_PAUSE": "1",
    "BLACKWIDOW_PHI_MIN_STD": "0.1",
}


def same_sources(health: dict[str, Any]) -> list[tuple[str, int, str]]:
    """A node's data sources as (key, subscribers, run): what a restart would change."""
    return [(s["key"], s["subscribers"], s["run"]) for s in health["data_sources"]]


def running_on(c: Cluster, token: str, crawler_ids: list[int]) -> dict[int, int | None]:
    """crawler id -> the node it runs on, None unless its state is running."""
    crawlers = [c.get(token, i) for i in crawler_ids]
    return {x["id"]: x["node_id"] if x["state"] == "running" else None for x in crawlers}


def monitor(c: Cluster) -> dict[str, Any]:
    return c.call("GET", "/api/v1/health").json()["monitor"]


def node_states(c: Cluster) -> dict[int, str]:
    return {n["id"]: n["state"] for n in c.call("GET", "/api/v1/nodes", c.admin_token).json()}


def test_phi_declares_a_killed_node_dead_and_its_crawlers_move(
    cluster: Callable[..., Cluster],
) -> None:
    c = cluster(3, **ONE_SECOND_POLLS)
    token = c.user()
    crawlers = [c.crawler(token, [c.feed(f"phi{n}", items=1, every=0.2)])["id"] for n in range(6)]
    wait_until(lambda: None not in running_on(c, token, crawlers).values(), what="all running")
    victim = running_on(c, token, crawlers)[crawlers[0]]
    moved = [i for i, node in running_on(c, token, crawlers).items() if node == victim]
    wait_until(  # a few answered polls give the detector a history of this rhythm
        lambda: c.get(token, crawlers[0])["items_collected"] > 5, what="a few cycles"
    )

    c.node_by_id(victim).kill()
    killed_at = time.monotonic()
    seen: dict[str, float] = {}

    def declared_dead() -> bool:
        state = node_states(c)[victim]
        seen.setdefault(state, time.monotonic() - killed_at)
        return state == "dead"

    wait_until(declared_dead, what="the killed node to be declared dead", timeout=30)
    wait_until(
        lambda: all(n not in (None, victim) for n in running_on(c, token, moved).values()),
        what="its crawlers to run on live nodes",
    )
    reassigned = time.monotonic() - killed_at
    suspect = f"suspect {seen['suspect']:.1f}s, " if "suspect" in seen else ""
    MEASUREMENTS.append(
        f"phi-accrual, 1s polls, acceptable pause 1s: kill -9 -> {suspect}"
        f"dead {seen['dead']:.1f}s, "
        f"its crawlers ({len(moved)}) running elsewhere {reassigned:.1f}s"
    )
    live = {n for n, state in node_states(c).items() if state != "dead"}
    assert len(live) == 2 and victim not in live
    assert set(running_on(c, token, crawlers).values()) <= live


def test_hub_killed_and_back_within_detach_after_restarts_nothing(
    cluster: Callable[..., Cluster],
) -> None:
    c = cluster(2, BLACKWIDOW_DETACH_AFTER="20", BLACKWIDOW_ORPHAN_AFTER="15")
    token = c.user()
    crawlers = [c.crawler(token, [c.feed(f"flow{n}", items=1, every=0.2)])["id"] for n in range(4)]
    wait_until(lambda: None not in running_on(c, token, crawlers).values(), what="all running")
    placement = running_on(c, token, crawlers)
    before = [c.node_health(node) for node in c.nodes]
    hub_port = int(c.hub_url.rsplit(":", 1)[1])
    old_holder = monitor(c)["holder"]

    c.hub.kill()
    killed_at = time.monotonic()
    c.start_hub(port=hub_port)
    first_cycle = wait_until(  # the lock row keeps the old leader's last cycle until then
        lambda: (m := monitor(c))["holder"] not in (None, old_holder) and m["last_cycle_at"],
        what="the restarted hub's first cycle",
    )
    resumed = time.monotonic() - killed_at
    wait_until(lambda: monitor(c)["last_cycle_at"] != first_cycle, what="a second cycle")
    counts = {i: len(c.items(token, i)) for i in crawlers}
    wait_until(
        lambda: all(len(c.items(token, i)) > counts[i] + 2 for i in crawlers),
        what="items to keep arriving",
    )

    after = [c.node_health(node) for node in c.nodes]
    for old, new in zip(before, after, strict=True):
        assert new["generation"] == old["generation"]  # never detached, never re-registered
        assert new["subscribers_started"] == old["subscribers_started"]
        assert same_sources(new) == same_sources(old)  # same runs: none restarted
    assert running_on(c, token, crawlers) == placement
    for crawler_id in crawlers:
        numbers = sorted(post_numbers(c.items(token, crawler_id)))
        assert numbers == list(range(1, len(numbers) + 1)), "an item lost or stored twice"
    MEASUREMENTS.append(
        f"hub kill -9 and restart within detach_after: monitor cycling again {resumed:.1f}s "
        f"after the kill; 0 subscriber restarts, 0 items lost or duplicated"
    )


def test_a_killed_leader_hands_the_monitor_to_another_hub(
    cluster: Callable[..., Cluster],
) -> None:
    c = cluster(1)
    second = c.add_hub()
    token = c.user()
    pids = {c.hub.process.pid: c.hub, second.process.pid: second}

    def holder(url: str) -> Any:
        return requests.get(f"{url}/api/v1/health", timeout=5).json()["monitor"]["holder"]

    leader_pid = int(wait_until(lambda: holder(second.url), what="a leader").split(":")[1])
    survivor = next(hub for pid, hub in pids.items() if pid != leader_pid)
    pids[leader_pid].kill()
    killed_at = time.monotonic()

    new_holder = wait_until(
        lambda: (h := holder(survivor.url)) and int(h.split(":")[1]) == survivor.process.pid and h,
        what="the surviving hub to lead",
    )
    takeover = time.monotonic() - killed_at
    c.hub = survivor  # the cluster's calls go to the hub that is left
    crawler = c.crawler(token, [c.feed("after-takeover", items=3)])
    wait_until(lambda: len(c.items(token, crawler["id"])) == 3, what="the new leader to assign")
    assert new_holder.split(":")[1] == str(survivor.process.pid)
    MEASUREMENTS.append(
        f"two hubs on one database, leader kill -9 -> the other leads: {takeover:.1f}s "
        f"(lock ttl = 3 polls + 1s)"
    )


def test_a_hub_stopped_cleanly_hands_the_lock_over_at_once(
    cluster: Callable[..., Cluster],
) -> None:
    """SIGTERM releases the leader lock, so a standby takes over without waiting for expiry."""
    c = cluster(0)
    wait_until(lambda: monitor(c)["holder"], what="the hub to lead")

    assert c.hub.stop() == 0

    with sqlite3.connect(c.workdir / "hub.db") as db:
        assert db.execute("SELECT holder, expires_at FROM monitor_lock").fetchall() == [
            (None, None)
        ]


def test_a_leader_paused_past_its_lock_does_not_act_when_it_resumes(
    cluster: Callable[..., Cluster],
) -> None:
    """A leader that stalls past its lock's expiry (here SIGSTOP, as a long GC pause or a
    swapped-out host would) finds a successor with a newer epoch when it resumes: it stops
    acting at once, and nodes refuse calls of an older epoch anyway."""
    c = cluster(1)
    second = c.add_hub()
    token = c.user()
    crawler = c.crawler(token, [c.feed("fenced", items=3)])
    wait_until(lambda: len(c.items(token, crawler["id"])) == 3, what="items")
    hubs = {c.hub.process.pid: c.hub, second.process.pid: second}
    leader_pid = int(monitor(c)["holder"].split(":")[1])
    paused, survivor = hubs[leader_pid], next(h for p, h in hubs.items() if p != leader_pid)

    paused.process.send_signal(signal.SIGSTOP)
    try:

        def survivor_leads() -> bool:
            holder = requests.get(f"{survivor.url}/api/v1/health", timeout=5).json()["monitor"]
            return (holder["holder"] or "").split(":")[1:2] == [str(survivor.process.pid)]

        wait_until(survivor_leads, what="the other hub to lead")
        c.hub = survivor
        off = c.call("PATCH", f"/api/v1/crawlers/{crawler['id']}", token, json={"enabled": False})
        assert off.status_code == 200
        wait_until(lambda: c.node_health(c.nodes[0])["crawlers"] == [], what="the crawler off")
    finally:
        paused.process.send_signal(signal.SIGCONT)

    # logged once its reconcile thread has ended: whatever it was doing is over
    wait_until(lambda: "lost the lead" in paused.log_path.read_text(), what="the lead lost")
    assert c.node_health(c.nodes[0])["crawlers"] == []
    assert c.get(token, crawler["id"])["state"] == "disabled"


def test_two_hubs_share_the_monitor_shards_and_one_takes_all_when_the_other_dies(
    cluster: Callable[..., Cluster],
) -> None:
    c = cluster(2, BLACKWIDOW_MONITOR_SHARDS="2")
    second = c.add_hub()
    token = c.user()
    crawlers = [c.crawler(token, [c.feed(f"sharded-{n}", items=2)]) for n in range(8)]
    for crawler in crawlers:
        wait_until(lambda cr=crawler: len(c.items(token, cr["id"])) == 2, what="items")

    def holders() -> list[str | None]:
        return [shard["holder"] for shard in monitor(c)["shards"]]

    wait_until(
        lambda: (h := holders()) and None not in h and len({x.split(":")[1] for x in h}) == 2,
        what="each hub leading one shard",
    )
    c.hub.kill()
    killed_at = time.monotonic()
    c.hub = second
    wait_until(
        lambda: (
            {h.split(":")[1] for h in holders() if h} == {str(second.process.pid)}
            and None not in holders()
        ),
        what="the surviving hub to lead both shards",
    )
    takeover = time.monotonic() - killed_at
    late = c.crawler(token, [c.feed("sharded-late", items=2)])
    wait_until(lambda: len(c.items(token, late["id"])) == 2, what="a new crawler placed")
    MEASUREMENTS.append(
        f"two hubs, 2 monitor shards, one hub kill -9 -> the other leads both: {takeover:.1f}s"
    )
