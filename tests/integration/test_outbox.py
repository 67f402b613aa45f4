"""A node killed with SIGKILL while Redis is down: restarted on its address, it hands Redis the
entries of the items it had stored, each once."""

from __future__ import annotations

from collections.abc import Callable

import redis

from blackwidow.core.queue import item_from_entry
from blackwidow.core.queue.entries import stream_key
from tests.component.test_queue import SpareRedis, closed_port
from tests.integration.conftest import Cluster, post_numbers
from tests.support import wait_until


def test_a_node_killed_while_redis_is_down_replays_its_spool(
    cluster: Callable[..., Cluster], spare_redis: SpareRedis
) -> None:
    running = cluster(0, BLACKWIDOW_REDIS_URL=spare_redis.url)
    port = closed_port()
    node = running.add_node(port=port)
    running.wait_for_nodes(1)
    token = running.user()
    crawler_id = running.crawler(token, [running.feed("tech", items=12)])["id"]
    wait_until(lambda: len(running.items(token, crawler_id)) == 12, what="items stored")
    wait_until(lambda: running.node_health(node)["queue"]["pending"] == 12, what="entries spooled")

    node.kill()
    spare_redis.up()
    running.add_node(port=port)

    with redis.Redis.from_url(spare_redis.url) as streams:
        wait_until(lambda: streams.xlen(stream_key(crawler_id)) >= 12, what="entries replayed")
        queued = [item_from_entry(f) for _, f in streams.xrange(stream_key(crawler_id))]
    stored = post_numbers(running.items(token, crawler_id))
    assert sorted(post_numbers([{"id": item.id} for item in queued])) == sorted(stored)
