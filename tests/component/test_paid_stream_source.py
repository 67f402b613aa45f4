"""The paid-stream ("datasift") data source against the fake metered stream, over real HTTP."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from sources.datasift.query import DatasiftCredential, DatasiftQuery
from sources.datasift.source import MAX_LINE, PaidStreamSource
from sources.fetch.fetcher import GuardedFetcher
from sources.model import SubscriberSpec
from tests.servers.fake_paid_stream import FakePaidStream
from tests.support import SinkRecorder, wait_until

FETCHER = GuardedFetcher(allow_hosts=frozenset({"127.0.0.1"}))
RATE_LIMIT_WAIT = 0.3
QUERY = 'interaction.content contains "cats"'


@pytest.fixture
def paid() -> Iterator[FakePaidStream]:
    with FakePaidStream(keepalive=0.05) as fake:
        yield fake


def credential(paid: FakePaidStream, **extra: Any) -> dict[str, Any]:
    fields = {"endpoint": f"{paid.url}/stream", "auth_value": paid.secret, **extra}
    return DatasiftCredential().load(fields)


class Running:
    def __init__(self, paid: FakePaidStream, query: str = QUERY, **extra: Any) -> None:
        loaded = DatasiftQuery().load({"query": query})
        spec = SubscriberSpec(crawler_id=1, user_id=1, source="datasift", query=loaded)
        self.sink = SinkRecorder()
        self.source = PaidStreamSource(
            "key", spec, credential(paid, **extra), FETCHER, RATE_LIMIT_WAIT
        )

    def __enter__(self) -> Running:
        self.source.start(self.sink)
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.source.stop()

    def ids(self) -> list[str]:
        return [item.id for batch in self.sink.batches for item in batch]


def test_items_of_the_query_arrive_in_order_for_every_subscriber(paid: FakePaidStream):
    with Running(paid) as running:
        wait_until(lambda: paid.open_streams() == 1, what="connected")
        ids = paid.publish_many(QUERY, [f"cat {n}" for n in range(50)])
        paid.publish("other query", "dog")
        wait_until(lambda: len(running.ids()) == 50, what="fifty items")
    assert running.ids() == ids
    assert set(running.sink.targets) == {None}  # the whole query is everyone's
    assert paid.delivered(QUERY) == 50
    first = running.sink.batches[0][0]
    assert (first.source, first.text, first.author) == ("datasift", "cat 0", "bob")
    assert first.published_at is not None


def test_a_dropped_stream_reconnects(paid: FakePaidStream):
    with Running(paid) as running:
        wait_until(lambda: paid.open_streams() == 1, what="connected")
        paid.drop_streams()
        wait_until(lambda: paid.connections_accepted == 2 and paid.open_streams() == 1)
        item = paid.publish(QUERY, "after the drop")
        wait_until(lambda: item in running.ids(), what="delivered after the drop")
        wait_until(lambda: running.sink.errors[-1] is None, what="the error cleared")


def test_a_429_waits_the_providers_retry_after_and_shows_on_the_status(paid: FakePaidStream):
    paid.fail_next_connects(1, 429)  # with Retry-After: 1
    with Running(paid) as running:
        wait_until(lambda: paid.open_streams() == 1, what="connected after the 429")
    (refused_at, refused), (connected_at, ok) = paid.connect_times[:2]
    assert (refused, ok) == (429, 200)
    assert connected_at - refused_at >= 1.0
    assert "rate limited by the provider (HTTP 429); retrying in 1s" in running.sink.errors


def test_a_wrong_secret_is_reported_and_never_shown(paid: FakePaidStream):
    with Running(paid, auth_value="not-the-secret") as running:
        wait_until(lambda: running.sink.errors, what="the refusal reported")
    assert running.sink.errors[0].startswith("the provider refused the credential (HTTP 401)")
    assert not any("not-the-secret" in (error or "") for error in running.sink.errors)


def test_a_stopped_stream_frees_the_querys_connection_at_once():
    with FakePaidStream(keepalive=60.0) as paid:
        with Running(paid) as running:
            wait_until(  # the provider counts the stream before the source says it connected
                lambda: paid.open_streams() == 1 and running.sink.errors == [None],
                what="connected",
            )
        wait_until(lambda: paid.open_streams() == 0, timeout=10, what="the connection freed")
    assert running.sink.errors == [None]  # hanging up is not a lost connection


def test_an_oversized_item_is_skipped_and_the_stream_goes_on(paid: FakePaidStream):
    with Running(paid) as running:
        wait_until(lambda: paid.open_streams() == 1, what="connected")
        paid.publish(QUERY, "x" * (MAX_LINE + 1))
        after = paid.publish(QUERY, "a normal item")
        wait_until(lambda: after in running.ids(), what="the item after the oversized one")
    assert running.ids() == [after]
    assert running.source.bad_lines == 1
    assert paid.connections_accepted == 1
