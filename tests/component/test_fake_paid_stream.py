"""The fake metered stream read with plain `requests`, as the "datasift" source will read it:
auth, items in order, keep-alives, one connection per query, drops, refusals and billing."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
import requests

from tests.servers.fake_paid_stream import FakePaidStream
from tests.support import wait_until

SECRET = "paid-secret"
CLIENT_TIMEOUT = 5.0
MAX_LINES = 200  # reading a stream always stops: keep-alives come every 0.1 s


@pytest.fixture
def fake() -> Iterator[FakePaidStream]:
    with FakePaidStream(keepalive=0.1) as paid:
        yield paid


def _open(fake: FakePaidStream, query: str, secret: str = SECRET, **kwargs: Any) -> Any:
    return requests.get(
        fake.url + "/stream",
        params={"q": query},
        headers={"Authorization": secret},
        stream=True,
        timeout=CLIENT_TIMEOUT,
        **kwargs,
    )


def _items(lines: Iterator[bytes], count: int) -> list[dict[str, Any]]:
    """The next `count` items, skipping keep-alives."""
    items = []
    for _, line in zip(range(MAX_LINES), lines, strict=False):
        if line:
            items.append(json.loads(line))
            if len(items) == count:
                return items
    raise AssertionError(f"got {len(items)} of {count} items")


def test_a_wrong_or_missing_secret_is_refused(fake: FakePaidStream) -> None:
    with _open(fake, "cats", secret="wrong") as wrong:
        wrong_status, wrong_body = wrong.status_code, wrong.json()
    missing = requests.get(fake.url + "/stream", params={"q": "cats"}, timeout=CLIENT_TIMEOUT)

    assert (wrong_status, wrong_body) == (401, {"error": "unauthorized"})
    assert missing.status_code == 401
    assert fake.connections_refused == 2
    assert fake.open_streams() == 0


def test_items_for_the_query_arrive_in_order_and_are_billed(fake: FakePaidStream) -> None:
    fake.publish("cats", "published before the connection: never sent")

    with _open(fake, "cats") as response:
        wait_until(lambda: fake.open_streams("cats") == 1, timeout=5, what="the stream")
        ids = fake.publish_many("cats", [f"meow {n}" for n in range(50)])
        fake.publish("dogs", "woof: no stream for this query")
        reply = fake.publish("cats", "a reply", author="carol", in_reply_to=ids[0])
        items = _items(response.iter_lines(), 51)

    assert response.status_code == 200
    assert response.headers["Content-Type"] == "application/x-ndjson"
    assert response.headers["Transfer-Encoding"] == "chunked"
    assert [item["id"] for item in items] == [*ids, reply]
    assert [item["text"] for item in items[:3]] == ["meow 0", "meow 1", "meow 2"]
    first, last = items[0], items[-1]
    assert set(first) == {
        "id",
        "text",
        "author",
        "url",
        "title",
        "created_at",
        "conversation_id",
        "in_reply_to",
    }
    assert first["author"] == "bob"
    assert first["url"].startswith("https://")
    assert first["title"] is None
    assert first["created_at"].endswith("+00:00")
    assert (last["author"], last["in_reply_to"]) == ("carol", ids[0])
    assert fake.delivered("cats") == 51
    assert fake.delivered("dogs") == 0


def test_keep_alives_are_empty_lines(fake: FakePaidStream) -> None:
    with _open(fake, "quiet") as response:
        lines = response.iter_lines()
        first, second = next(lines), next(lines)

    assert (first, second) == (b"", b"")
    assert fake.delivered("quiet") == 0


def test_a_second_connection_for_the_same_query_is_refused(fake: FakePaidStream) -> None:
    with _open(fake, "cats") as first, _open(fake, "dogs") as other:
        wait_until(lambda: fake.open_streams() == 2, timeout=5, what="both streams")
        with _open(fake, "cats") as second:
            second_status, second_body = second.status_code, second.json()
        fake.publish("cats", "meow")
        item = _items(first.iter_lines(), 1)[0]
        assert other.status_code == 200

    assert (second_status, second_body) == (429, {"error": "too many connections"})
    assert item["text"] == "meow"
    assert fake.connections_refused == 1
    assert fake.connections_accepted == 2
    assert fake.max_open_streams == 1
    assert fake.delivered("cats") == 1


def test_drop_cuts_the_stream_and_a_new_connection_is_accepted(fake: FakePaidStream) -> None:
    with _open(fake, "cats") as response:
        wait_until(lambda: fake.open_streams("cats") == 1, timeout=5, what="the stream")
        fake.drop_streams()
        with pytest.raises(requests.exceptions.ChunkedEncodingError):
            for _ in zip(range(MAX_LINES), response.iter_lines(), strict=False):
                pass

    assert fake.open_streams() == 0
    with _open(fake, "cats") as again:
        wait_until(lambda: fake.open_streams("cats") == 1, timeout=5, what="the new stream")
        fake.publish("cats", "after the drop")
        assert _items(again.iter_lines(), 1)[0]["text"] == "after the drop"
    assert fake.connections_accepted == 2


def test_queued_failures_refuse_the_next_connections(fake: FakePaidStream) -> None:
    fake.fail_next_connects(1)
    fake.fail_next_connects(1, status=503)

    with _open(fake, "cats") as limited:
        limited_answer = limited.status_code, limited.headers.get("Retry-After")
    with _open(fake, "cats") as unavailable:
        unavailable_status = unavailable.status_code
    with _open(fake, "cats") as accepted:
        accepted_status = accepted.status_code

    assert limited_answer == (429, "1")
    assert unavailable_status == 503
    assert accepted_status == 200
    assert [status for _, status in fake.connect_times] == [429, 503, 200]
    assert fake.connections_refused == 2
    assert fake.connections_accepted == 1


def test_a_client_going_away_is_noticed(fake: FakePaidStream) -> None:
    with _open(fake, "cats"):
        wait_until(lambda: fake.open_streams() == 1, timeout=5, what="the stream")

    wait_until(lambda: fake.open_streams() == 0, timeout=1, what="the stream to be released")
    fake.publish("cats", "nobody listens")
    assert fake.delivered("cats") == 0


def test_configured_header_and_parameter() -> None:
    with FakePaidStream(secret="s", header="X-Api-Key", param="query") as fake:
        wrong = requests.get(
            fake.url + "/any/path", params={"q": "cats"}, headers={"X-Api-Key": "s"}, timeout=5
        )
        with requests.get(
            fake.url + "/any/path",
            params={"query": "cats"},
            headers={"X-Api-Key": "s"},
            stream=True,
            timeout=CLIENT_TIMEOUT,
        ) as right:
            right_status = right.status_code

    assert wrong.status_code == 400
    assert right_status == 200


def test_closing_the_fake_ends_open_streams() -> None:
    with FakePaidStream(keepalive=0.1) as fake:
        response = _open(fake, "cats")
        wait_until(lambda: fake.open_streams() == 1, timeout=5, what="the stream")
    with response:
        assert set(response.iter_lines()) <= {b""}  # keep-alives, then a clean end
