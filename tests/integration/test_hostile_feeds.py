"""A node meets malformed and hostile feeds: each shows as the crawler's last_error, and the
node, and every other crawler on it, keep working."""

from __future__ import annotations

import pytest

from tests.servers.hostile_http import HostileServer
from tests.support import wait_until


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("/invalid-xml", "not a feed"),
        ("/billion-laughs", "entit"),
        ("/redirect-loop", "redirect"),
        ("/huge", "larger"),
        ("/error-500", "HTTP 500"),
    ],
)
def test_a_hostile_feed_marks_the_crawler_and_spares_the_node(cluster, path, reason):
    c = cluster(1)
    token = c.user()
    with HostileServer() as hostile:
        bad = c.crawler(token, [hostile.url(path)])
        good = c.crawler(token, [c.feed("calm", items=6)])
        error = wait_until(lambda: c.get(token, bad["id"])["last_error"], what="last_error")
        assert reason.lower() in error.lower() and path in error
        wait_until(lambda: len(c.items(token, good["id"])) == 6, what="the good crawler's items")
        assert c.node_health(c.nodes[0])["status"] == "ok"
        assert c.items(token, bad["id"]) == []


def test_a_crawler_whose_every_feed_fails_shows_failing_and_each_feeds_health(cluster):
    c = cluster(1)
    token = c.user()
    with HostileServer() as hostile:
        broken = c.crawler(token, [hostile.url("/error-500")])
        mixed = c.crawler(token, [c.feed("calm", items=3), hostile.url("/error-500")])

        wait_until(
            lambda: c.get(token, broken["id"])["state"] == "failing",
            what="the broken crawler failing",
        )
        [health] = c.feed_health(token, broken["id"])
        assert health["last_status"] == 500 and health["error_streak"] >= 1
        assert health["last_success_at"] is None and health["next_due_at"] is not None

        def both_fetched():
            feeds = c.feed_health(token, mixed["id"]) or []
            seen = sorted((f["entries"] or 0, f["error_streak"] > 0) for f in feeds)
            return seen == [(0, True), (3, False)]

        wait_until(both_fetched, what="both feeds of the mixed crawler fetched")
        assert c.get(token, mixed["id"])["state"] == "running"  # one feed still delivers
