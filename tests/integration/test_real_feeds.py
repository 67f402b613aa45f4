"""The real-feed corpus through a real hub and node: every feed feedparser reads is collected
completely, each by its own crawler."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.servers.feed_corpus import MANIFEST, corpus_server, distinct_entries, feedparser_alone
from tests.summary import MEASUREMENTS
from tests.support import wait_until

# Re-polls are 304s (the corpus server sends ETags); a fetch that fails on a loaded machine
# is retried two intervals later, well within the deadline.
POLLS = {"BLACKWIDOW_FEED_INTERVAL": "2"}


@pytest.mark.timeout(180)
def test_every_feed_feedparser_reads_is_collected_completely(cluster) -> None:
    read = {name: feedparser_alone(name) for name in MANIFEST}
    expected = {name: distinct_entries(parsed) for name, parsed in read.items() if parsed.entries}
    c = cluster(1, **POLLS)
    token = c.user()
    with corpus_server() as url, ThreadPoolExecutor(8) as pool:
        created = pool.map(lambda name: (name, c.crawler(token, [f"{url}/{name}"])), expected)
        crawler_of = {crawler["id"]: name for name, crawler in created}

        def collected() -> dict[str, int]:
            listed = c.call("GET", "/api/v1/crawlers", token).json()
            return {crawler_of[cr["id"]]: cr["items_collected"] for cr in listed}

        def missing() -> dict[str, tuple[int, int]]:
            return {n: (got, expected[n]) for n, got in collected().items() if got != expected[n]}

        # a deadline for a loaded machine (it takes ~10 s on two idle cores)
        try:
            wait_until(lambda: not missing(), timeout=120, what="every feed's items collected")
        except AssertionError as error:
            raise AssertionError(f"{error}; (collected, expected): {missing()}") from None

    assert sum(expected.values()) > 1000
    listed = c.call("GET", "/api/v1/crawlers", token).json()
    assert {cr["last_error"] for cr in listed} == {None}
    MEASUREMENTS.append(
        f"real-feed corpus through one node: {len(expected)} of {len(MANIFEST)} feeds read by "
        f"feedparser, all collected completely ({sum(expected.values())} items)"
    )
