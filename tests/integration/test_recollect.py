"""Time segments and the key resolver through REST, with real processes: a crawler's
recollect_after and url_keys are taken, shown, changed and refused by the hub, pushed to its
node, and its items come back as versions of the segment they were collected in.

Collecting an item again needs a segment to pass, an hour at least: that is shown in
tests/component/test_seen_set.py with the node's clocks moved, not waited for here.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

from sources.segments import segment_start, version_of, version_text
from tests.integration.conftest import Cluster
from tests.support import wait_until

HOUR = 3600


def test_a_crawler_with_recollect_after_stores_versions_of_its_segment(
    cluster: Callable[..., Cluster],
) -> None:
    running = cluster(1)
    token = running.user()
    before = segment_start(datetime.now(UTC), HOUR)
    rules = {"drop": ["session"], "keep": []}
    made = running.create(
        token,
        "rss",
        {"feeds": [running.feed("tech", items=5)], "url_keys": rules},
        recollect_after=HOUR,
    )
    shown = running.get(token, made["id"])
    assert (shown["recollect_after"], shown["query"]["url_keys"]) == (HOUR, rules)

    items = wait_until(lambda: running.items(token, made["id"]), what="the crawler's items")
    after = segment_start(datetime.now(UTC), HOUR)
    for item in items:
        version = version_of(item["id"])
        assert version in (before, after) and item["id"].endswith("@" + version_text(version))
        assert datetime.fromisoformat(item["version"]) == version

    path = f"/api/v1/crawlers/{made['id']}"
    changed = running.call("PATCH", path, token, json={"recollect_after": 7 * 86400})
    assert changed.status_code == 200 and changed.json()["recollect_after"] == 7 * 86400
    refused = running.call("PATCH", path, token, json={"recollect_after": HOUR - 1})
    assert refused.status_code == 422
    assert refused.json()["error"]["field"] == "recollect_after"
    assert running.get(token, made["id"])["recollect_after"] == 7 * 86400  # nothing half-written
    off = running.call("PATCH", path, token, json={"recollect_after": None})
    assert off.status_code == 200 and off.json()["recollect_after"] is None
