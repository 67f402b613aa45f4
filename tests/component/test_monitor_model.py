"""A model-based test of the monitor: random histories of API writes, nodes coming and going,
hub processes restarting and leaderships moving, driven against the real monitor, real SQL
and real nodes (tests.component.model_cluster); after each history settles, the control
plane's invariants hold (tests.component.model_invariants).

Bounded and derandomized: the suite runs the same MODEL_HISTORIES histories on every run.
`make model-check` runs the same test over many more (BLACKWIDOW_MODEL_HISTORIES).
"""

from __future__ import annotations

import itertools
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    precondition,
    rule,
    run_state_machine_as_test,
)

from blackwidow.demo.feed_server import FeedServer
from tests.component.conftest import ADMIN, bearer
from tests.component.model_cluster import HUBS, Cluster
from tests.component.model_invariants import Reset, check

MODEL_HISTORIES = int(os.environ.get("BLACKWIDOW_MODEL_HISTORIES", "30"))
MODEL_SETTINGS = settings(
    max_examples=MODEL_HISTORIES,
    stateful_step_count=15,
    derandomize=True,  # the same histories on every run: a failure reproduces
    database=None,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    # no explain phase: its line tracing (before Python 3.12) makes a real cluster crawl
    phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink],
    report_multiple_bugs=False,
)
FEEDS = ("one", "two", "three")  # equal feeds share a source key, so a data source
WINDOWS = (None, {"cron": "* * * * *", "for": 20}, {"cron": "*/2 * * * *", "for": 60})
LIMITS = (None, 2, 5)  # each feed holds 3 items
BUDGETS = (None, 4, 8)
CAPACITIES = (1, 2, 4)

crawler_bodies = st.fixed_dictionaries(
    {
        "feed": st.sampled_from(FEEDS),
        "item_limit": st.sampled_from(LIMITS),
        "schedule": st.sampled_from(WINDOWS),
        "enabled": st.booleans(),
    }
)
edits = st.one_of(
    st.builds(lambda f: {"feed": f}, st.sampled_from(FEEDS)),
    st.builds(lambda n: {"item_limit": n}, st.sampled_from(LIMITS)),
    st.builds(lambda w: {"schedule": w}, st.sampled_from(WINDOWS)),
)
picks = st.integers(min_value=0, max_value=99)  # one of the things there are, modulo their count


@dataclass(frozen=True)
class Where:
    template: Path  # the migrated hub database each history copies
    workdir: Path
    feeds_url: str


class MonitorModel(RuleBasedStateMachine):
    histories = itertools.count()

    def __init__(self, where: Where) -> None:
        super().__init__()
        self.where = where
        self.cluster: Cluster | None = None
        self.tokens: list[str] = []
        self.users: list[int] = []
        self.reset_crawlers: set[int] = set()  # limits set after they could have stored items
        self.reset_users: set[int] = set()  # likewise, budgets
        self.crawlers: list[tuple[int, str]] = []  # (crawler id, its user's token)
        self.killed: list[tuple[int, int]] = []  # (port, capacity) of nodes killed
        self.names = itertools.count(1)

    @property
    def world(self) -> Cluster:
        assert self.cluster is not None
        return self.cluster

    @initialize(
        routing=st.sampled_from(("modulo", "rendezvous", "weighted")),
        shards=st.sampled_from((1, 2)),
        nodes=st.lists(st.sampled_from(CAPACITIES), max_size=2),
        budgets=st.tuples(st.sampled_from(BUDGETS), st.sampled_from(BUDGETS)),
        user=st.integers(0, 1),
        crawlers=st.lists(crawler_bodies, max_size=4),
    )
    def start(
        self,
        routing: str,
        shards: int,
        nodes: list[int],
        budgets: tuple[int | None, int | None],
        user: int,
        crawlers: list[dict],
    ) -> None:
        history = self.where.workdir / f"history-{next(self.histories)}"
        self.cluster = Cluster(self.where.template, history, routing, shards)
        for name, budget in zip(("ana", "bob"), budgets, strict=True):
            body = {"name": name, "item_limit": budget}
            made = self.world.api.post("/api/v1/users", json=body, headers=bearer(ADMIN))
            assert made.status_code == 201, made.json
            self.tokens.append(made.json["token"])
            self.users.append(made.json["id"])
        for capacity in nodes:
            self.world.start_node(capacity)
        for drawn in crawlers:
            self.create(user, drawn)

    # -- analysts' writes, through the hub's API -----------------------------------------------

    def _body(self, drawn: dict[str, Any]) -> dict[str, Any]:
        feed = f"{self.where.feeds_url}/feeds/{drawn['feed']}.xml?items=3"
        fields = {k: v for k, v in drawn.items() if k != "feed"}
        name = f"c{next(self.names)}"  # a user's crawler names are unique
        return {"name": name, "source": "rss", "query": {"feeds": [feed]}, **fields}

    @rule(user=st.integers(0, 1), drawn=crawler_bodies)
    def create(self, user: int, drawn: dict[str, Any]) -> None:
        token = self.tokens[user]
        made = self.world.api.post(
            "/api/v1/crawlers", json=self._body(drawn), headers=bearer(token)
        )
        assert made.status_code == 201, made.json
        self.crawlers.append((made.json["id"], token))

    @rule(user=st.integers(0, 1), drawn=st.lists(crawler_bodies, min_size=2, max_size=4))
    def create_batch(self, user: int, drawn: list[dict[str, Any]]) -> None:
        token = self.tokens[user]
        body = {"crawlers": [self._body(d) for d in drawn]}
        made = self.world.api.post("/api/v1/crawlers/batch", json=body, headers=bearer(token))
        assert made.status_code == 201, made.json
        self.crawlers += [(c["id"], token) for c in made.json["crawlers"]]

    @precondition(lambda self: self.crawlers)
    @rule(pick=picks, edit=edits)
    def edit(self, pick: int, edit: dict[str, Any]) -> None:
        crawler_id, token = self.crawlers[pick % len(self.crawlers)]
        if "feed" in edit:
            edit = {"query": self._body(edit)["query"]}
        if "item_limit" in edit:
            self.reset_crawlers.add(crawler_id)
        self._patch(crawler_id, token, edit)

    @precondition(lambda self: self.crawlers)
    @rule(pick=picks)
    def toggle(self, pick: int) -> None:
        crawler_id, token = self.crawlers[pick % len(self.crawlers)]
        shown = self.world.api.get(f"/api/v1/crawlers/{crawler_id}", headers=bearer(token)).json
        self._patch(crawler_id, token, {"enabled": not shown["enabled"]})

    def _patch(self, crawler_id: int, token: str, edit: dict[str, Any]) -> None:
        url = f"/api/v1/crawlers/{crawler_id}"
        answer = self.world.api.patch(url, json=edit, headers=bearer(token))
        assert answer.status_code == 200, answer.json

    @precondition(lambda self: self.crawlers)
    @rule(pick=picks)
    def delete(self, pick: int) -> None:
        crawler_id, token = self.crawlers.pop(pick % len(self.crawlers))
        answer = self.world.api.delete(f"/api/v1/crawlers/{crawler_id}", headers=bearer(token))
        assert answer.status_code == 204

    @rule(user=st.integers(0, 1), budget=st.sampled_from(BUDGETS))
    def set_budget(self, user: int, budget: int | None) -> None:
        self.reset_users.add(self.users[user])
        url = f"/api/v1/users/{self.users[user]}"
        answer = self.world.api.patch(url, json={"item_limit": budget}, headers=bearer(ADMIN))
        assert answer.status_code == 200, answer.json

    # -- nodes -----------------------------------------------------------------------------

    @precondition(lambda self: len(self.world.nodes) < 4)
    @rule(capacity=st.sampled_from(CAPACITIES))
    def start_node(self, capacity: int) -> None:
        self.world.start_node(capacity)

    @precondition(lambda self: self.world.nodes)
    @rule(pick=picks)
    def kill_node(self, pick: int) -> None:
        node = self.world.nodes[pick % len(self.world.nodes)]
        self.killed.append((node.port, node.capacity))
        self.world.kill_node(node)

    @precondition(lambda self: any(node.up for node in self.world.nodes))
    @rule(pick=picks)
    def silence_node(self, pick: int) -> None:
        up = [node for node in self.world.nodes if node.up]
        up[pick % len(up)].silence()

    @precondition(lambda self: any(not node.up for node in self.world.nodes))
    @rule(pick=picks)
    def heal_node(self, pick: int) -> None:
        silent = [node for node in self.world.nodes if not node.up]
        silent[pick % len(silent)].heal()

    @precondition(lambda self: self.killed)
    @rule(pick=picks, same_address=st.booleans(), capacity=st.sampled_from(CAPACITIES))
    def restart_node(self, pick: int, same_address: bool, capacity: int) -> None:
        """A supervisor starts the node again, at its address or a new one, with a capacity."""
        port, _capacity = self.killed.pop(pick % len(self.killed))
        self.world.start_node(capacity, port if same_address else 0)

    # -- hub processes and time ---------------------------------------------------------------

    @rule(name=st.sampled_from(HUBS), graceful=st.booleans())
    def stop_hub(self, name: str, graceful: bool) -> None:
        self.world.stop_hub(name, graceful)

    @rule(name=st.sampled_from(HUBS))
    def start_hub(self, name: str) -> None:
        self.world.start_hub(name)

    @rule(cycles=st.integers(1, 15))
    def pass_time(self, cycles: int) -> None:
        for _ in range(cycles):
            self.world.cycle()

    @rule()
    def settle(self) -> None:
        self.world.settle()
        check(self.world, Reset(frozenset(self.reset_crawlers), frozenset(self.reset_users)))

    def teardown(self) -> None:
        if self.cluster is None:
            return
        try:
            self.settle()
        finally:
            self.cluster.close()


@pytest.mark.timeout(60 + 20 * MODEL_HISTORIES)
def test_the_control_plane_converges_from_any_history(
    sqlite_template: Path, tmp_path: Path, feeds: FeedServer
) -> None:
    where = Where(sqlite_template, tmp_path, feeds.url)
    run_state_machine_as_test(lambda: MonitorModel(where), settings=MODEL_SETTINGS)
