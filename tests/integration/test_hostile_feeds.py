"""A node meets malformed and hostile feeds: each shows as the crawler's last_error, and the
node, and every other crawler on it, keep working."""

from __future__ import annotations

import pytest

from tests.servers.hostile_http import HostileServer
from tests.support import wait_until


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("/invalid-xml", "invalid XML"),
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
