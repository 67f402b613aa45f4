"""End to end on loopback: a hub, spawn nodes and a feed server as real processes."""

from __future__ import annotations

import re
import time

import pytest
import requests

from tests.integration.conftest import post_numbers
from tests.summary import MEASUREMENTS
from tests.support import wait_until


def test_items_arrive_and_can_be_read_back(cluster):
    c = cluster(2)
    token = c.user()
    crawler = c.crawler(token, [c.feed("tech", items=12)])
    wait_until(lambda: len(c.items(token, crawler["id"])) == 12, what="12 items")
    state = wait_until(
        lambda: (got := c.get(token, crawler["id"]))["items_collected"] == 12 and got,
        what="the monitor to record 12 items",
    )
    assert state["state"] == "running" and state["node_id"] is not None
    items = c.items(token, crawler["id"])
    assert len({i["id"] for i in items}) == 12
    assert items[0]["crawler_id"] == crawler["id"] and items[0]["source"] == "rss"
    assert all(i["title"].startswith("Tech story") for i in items)


def test_crawlers_with_the_same_feeds_share_one_data_source(cluster):
    c = cluster(3)
    token = c.user()
    feeds = [c.feed("tech", items=16), c.feed("science", items=8)]
    everything = c.crawler(token, feeds)
    python_only = c.crawler(token, list(reversed(feeds)), keywords=["python"])
    assert everything["uuid"] == python_only["uuid"]
    both_running = wait_until(
        lambda: all(c.get(token, x["id"])["state"] == "running" for x in (everything, python_only)),
        what="both crawlers running",
    )
    assert both_running
    node_ids = {c.get(token, x["id"])["node_id"] for x in (everything, python_only)}
    assert len(node_ids) == 1
    health = c.node_health(c.node_by_id(node_ids.pop()))
    assert [s["subscribers"] for s in health["data_sources"]] == [2]
    wait_until(lambda: len(c.items(token, everything["id"])) == 24, what="all 24 items")
    filtered = wait_until(lambda: c.items(token, python_only["id"]), what="python items")
    assert all("python" in (i["title"] + i["text"]).lower() for i in filtered)
    assert 0 < len(filtered) < 24


def test_killed_node_hands_its_crawlers_to_a_live_node(cluster):
    c = cluster(3)
    token = c.user()
    crawlers = [c.crawler(token, [c.feed(f"live{n}", items=1, every=0.2)]) for n in range(4)]
    wait_until(
        lambda: all(c.get(token, x["id"])["state"] == "running" for x in crawlers),
        what="every crawler running",
    )
    victim_id = c.get(token, crawlers[0]["id"])["node_id"]
    moved = [x["id"] for x in crawlers if c.get(token, x["id"])["node_id"] == victim_id]
    before = {i: c.get(token, i)["items_collected"] for i in moved}
    c.node_by_id(victim_id).kill()
    killed_at = time.monotonic()

    def running_elsewhere() -> bool:
        now = [c.get(token, i) for i in moved]
        return all(x["node_id"] not in (None, victim_id) and x["state"] == "running" for x in now)

    wait_until(running_elsewhere, what="the crawlers to run on a live node")
    failover = time.monotonic() - killed_at
    wait_until(
        lambda: all(c.get(token, i)["items_collected"] > before[i] for i in moved),
        what="items to keep arriving after the move",
    )
    MEASUREMENTS.append(
        f"kill -9 of a node -> its crawlers running elsewhere: {failover:.1f}s "
        f"(poll 0.5s, phi-accrual, acceptable pause 1s)"
    )
    assert c.call("GET", "/api/v1/nodes/count").json()["active"] == 2


def test_disabled_crawler_stops_and_its_data_source_goes(cluster):
    c = cluster(1)
    token = c.user()
    crawler = c.crawler(token, [c.feed("flow", items=1, every=0.2)])
    wait_until(lambda: c.get(token, crawler["id"])["items_collected"] > 2, what="items")
    c.call("PATCH", f"/api/v1/crawlers/{crawler['id']}", token, json={"enabled": False})
    wait_until(lambda: c.node_health(c.nodes[0])["data_sources"] == [], what="the source to stop")
    stored = c.items(token, crawler["id"])
    wait_until(lambda: c.get(token, crawler["id"])["state"] == "disabled", what="disabled")
    newest = max(post_numbers(stored))

    def published() -> int:  # the feed's newest entry (it shows only its latest 50)
        text = requests.get(c.feed("flow", items=1, every=0.2), timeout=5).text
        return max(int(n) for n in re.findall(r"/posts/flow/(\d+)</guid>", text))

    wait_until(lambda: published() > newest + 3, what="the feed to publish more")
    assert len(c.items(token, crawler["id"])) == len(stored)


def test_deleting_a_running_crawler_leaves_the_monitor_placing_others(cluster):
    """Its node reports it, counting on, until the hub removes it: the polls that hear it
    after the deletion record nothing of it, and the crawlers created after are placed."""
    c = cluster(1)
    token = c.user()
    deleted = c.crawler(token, [c.feed("deleted", items=1, every=0.2)])
    # a newer crawler, so SQLite gives the later one a new id rather than the deleted one's
    kept = c.crawler(token, [c.feed("kept", items=1, every=0.2)])
    first = wait_until(lambda: c.get(token, deleted["id"])["items_collected"], what="items")
    # still collecting as it is deleted: its status changes between polls
    wait_until(lambda: c.get(token, deleted["id"])["items_collected"] > first + 2, what="more")
    assert c.call("DELETE", f"/api/v1/crawlers/{deleted['id']}", token).status_code == 204
    later = c.crawler(token, [c.feed("later", items=1, every=0.2)])
    assert later["id"] != deleted["id"]
    wait_until(lambda: c.get(token, later["id"])["state"] == "running", what="the later one placed")
    wait_until(lambda: len(c.node_health(c.nodes[0])["data_sources"]) == 2, what="two sources")
    assert c.get(token, kept["id"])["state"] == "running"


def test_crawler_limit_is_exact(cluster):
    c = cluster(2)
    token = c.user()
    crawler = c.crawler(token, [c.feed("many", items=30)], item_limit=7)
    wait_until(
        lambda: c.get(token, crawler["id"])["state"] == "limit_reached", what="limit_reached"
    )
    assert len(c.items(token, crawler["id"])) == 7
    assert c.get(token, crawler["id"])["items_collected"] == 7


@pytest.mark.parametrize("shards", [1, 2])
def test_user_limit_is_never_overshot_across_nodes(cluster, shards):
    """With two monitor shards, two hubs each lease from the one budget."""
    c = cluster(3, BLACKWIDOW_MONITOR_SHARDS=str(shards))
    if shards > 1:
        c.add_hub()
    token = c.user(item_limit=25)
    crawlers = [c.crawler(token, [c.feed(f"budget{n}", items=20)]) for n in range(6)]

    def total() -> int:
        return sum(len(c.items(token, x["id"])) for x in crawlers)

    wait_until(
        lambda: all(c.get(token, x["id"])["state"] == "limit_reached" for x in crawlers),
        what="the user's budget to be used up",
    )
    assert total() == 25


@pytest.mark.slow
def test_nodes_detach_when_the_hub_is_gone_and_everything_runs_again_when_it_is_back(cluster):
    c = cluster(2)
    token = c.user()
    crawlers = [c.crawler(token, [c.feed(f"steady{n}", items=5)])["id"] for n in range(4)]

    def all_running() -> bool:
        return all(c.get(token, i)["state"] == "running" for i in crawlers)

    wait_until(all_running, what="every crawler running")
    hub_port = c.hub_url.rsplit(":", 1)[1]
    c.hub.kill()
    wait_until(
        lambda: all(
            (h := c.node_health(node))["data_sources"] == [] and not h["registered"]
            for node in c.nodes
        ),
        what="both nodes to detach (cost safety)",
    )
    restarted_at = time.monotonic()
    c.start_hub(port=int(hub_port))

    def back_on_both_nodes() -> bool:
        """Each node re-registers on its own backoff, so the first one back may briefly
        run all four; the states in SQL still say running from before: ask the nodes."""
        healths = [c.node_health(node) for node in c.nodes]
        running = sum(len(h["data_sources"]) for h in healths)
        return all(h["registered"] for h in healths) and running == 4

    wait_until(back_on_both_nodes, what="both nodes registered and every crawler running")
    MEASUREMENTS.append(
        f"hub down past detach_after (4s) -> both nodes re-registered and all 4 crawlers "
        f"running again {time.monotonic() - restarted_at:.1f}s after the hub restarted "
        f"(poll 0.5s, registration backoff up to 10s)"
    )
    wait_until(all_running, what="the hub to record them running")


def test_bad_requests_get_clear_errors_over_http(cluster):
    c = cluster(1)
    token = c.user()
    bad = c.call(
        "POST",
        "/api/v1/crawlers",
        token,
        json={"name": "x", "source": "rss", "query": {"feeds": ["nope"]}},
    )
    assert bad.status_code == 422
    assert bad.json()["error"]["field"] == "query.feeds.0"
    assert c.call("GET", "/api/v1/crawlers/4242", token).status_code == 404
    assert c.call("GET", "/api/v1/crawlers", "not-a-token").status_code == 401
    assert c.call("GET", "/api/v1/crawlers").json()["error"]["field"] == "Authorization"
