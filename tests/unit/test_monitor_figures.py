"""The monitor's figures (blackwidow.monitor.figures) and their Prometheus families
(blackwidow.metrics.monitor_figures): per-node poll times summed over shards, carried over to a
new leader, and forgotten with the node."""

from __future__ import annotations

from blackwidow.metrics.monitor_figures import families
from blackwidow.monitor.figures import POLL_BUCKETS, MonitorFigures


def _family(saved: list, nodes: list[int], name: str):
    return next(f for f in families(saved, nodes) if f.name == name)


def _samples(family) -> dict[tuple[str, tuple], float]:
    return {(s.name, tuple(sorted(s.labels.items()))): s.value for s in family.samples}


def test_a_nodes_answered_polls_are_counted_and_timed_and_its_failures_are_not():
    figures = MonitorFigures()
    figures.polled({1: 0.02, 2: 0.3}, asked=[1, 2, 3])
    figures.polled({1: 0.04}, asked=[1, 2, 3])  # 2 and 3 asked, no answer
    saved = figures.to_json()
    assert saved["node_polls"] == {"1": [2, 0.06], "2": [1, 0.3]}
    assert sum(saved["poll_buckets"]) == 3
    assert saved["poll_buckets"][POLL_BUCKETS.index(0.025)] == 1  # 0.02 s: the 25 ms bucket


def test_a_node_no_longer_polled_is_forgotten_but_the_histogram_over_all_nodes_is_kept():
    figures = MonitorFigures()
    figures.polled({1: 0.02, 2: 0.3}, asked=[1, 2])
    figures.polled({1: 0.02}, asked=[1])  # node 2 was deleted
    saved = figures.to_json()
    assert saved["node_polls"] == {"1": [2, 0.04]}
    assert sum(saved["poll_buckets"]) == 3  # a counter never goes back
    assert saved["poll_sum"] == 0.34


def test_a_new_leader_counts_on_from_the_saved_poll_figures():
    before = MonitorFigures()
    before.polled({1: 0.5}, asked=[1])
    after = MonitorFigures(before.to_json())
    after.polled({1: 1.5}, asked=[1])
    assert after.to_json()["node_polls"] == {"1": [2, 2.0]}
    assert sum(after.to_json()["poll_buckets"]) == 2


def test_figures_saved_before_poll_times_existed_start_them_from_zero():
    old = {"counts": {"polls.ok": 3}, "cycle_buckets": [0] * 11, "cycle_sum": 0.0, "phi": {}}
    saved = MonitorFigures(old).to_json()
    assert saved["node_polls"] == {} and sum(saved["poll_buckets"]) == 0
    assert saved["counts"]["polls.ok"] == 3


def test_poll_times_are_summed_over_the_shards_for_the_nodes_that_exist():
    shard_0, shard_1 = MonitorFigures(), MonitorFigures()
    shard_0.polled({1: 0.1, 2: 0.2}, asked=[1, 2])
    shard_1.polled({1: 0.3, 2: 0.4}, asked=[1, 2])
    saved = [shard_0.to_json(), shard_1.to_json()]
    per_node = _samples(_family(saved, [1], "blackwidow_node_poll_seconds"))
    assert per_node == {
        ("blackwidow_node_poll_seconds_count", (("node", "1"),)): 2,
        ("blackwidow_node_poll_seconds_sum", (("node", "1"),)): 0.4,
    }  # node 2 no longer exists: no series
    overall = _samples(_family(saved, [1], "blackwidow_monitor_poll_seconds"))
    assert overall[("blackwidow_monitor_poll_seconds_count", ())] == 4
    assert overall[("blackwidow_monitor_poll_seconds_bucket", (("le", "0.25"),))] == 2
    assert overall[("blackwidow_monitor_poll_seconds_bucket", (("le", "+Inf"),))] == 4
