"""SubscriberSpec: its ceiling, a digest stable across spellings, and its JSON round trip
through the one reader of a pushed spec."""

from __future__ import annotations

import dataclasses
import json

import pytest
from marshmallow import ValidationError

from blackwidow.core.node_schemas import SubscriberSpecSchema
from sources.model import SubscriberSpec


def spec(**changes) -> SubscriberSpec:
    values = {
        "crawler_id": 7,
        "user_id": 3,
        "source": "rss",
        "query": {"feeds": ["https://example.com/feed.xml"], "keywords": ["python"]},
        "item_limit": None,
        "lease": None,
    }
    return SubscriberSpec(**{**values, **changes})


@pytest.mark.parametrize(
    ("item_limit", "lease", "ceiling"),
    [
        (None, None, None),
        (100, None, 100),
        (None, 40, 40),
        (100, 40, 40),
        (40, 100, 40),
        (50, 50, 50),
        (0, 100, 0),  # a zero bound is a bound, not "no bound"
        (100, 0, 0),
    ],
)
def test_ceiling(item_limit, lease, ceiling):
    assert spec(item_limit=item_limit, lease=lease).ceiling == ceiling


def test_digest_is_pinned_and_hex():
    # Nodes report digests the hub compares across releases: a change re-pushes every spec.
    assert spec().digest() == "fbab6666923f1f2b679071451673767432ce0263"


def test_digest_ignores_query_key_order():
    a = spec(query={"feeds": ["https://a.example/"], "keywords": ["x"]})
    b = spec(query={"keywords": ["x"], "feeds": ["https://a.example/"]})
    assert a.digest() == b.digest()


@pytest.mark.parametrize(
    "changes",
    [
        {"lease": 10},
        {"item_limit": 10},
        {"crawler_id": 8},
        {"user_id": 4},
        {"query": {"feeds": ["https://example.com/feed.xml"], "keywords": ["rust"]}},
        {"query": {"feeds": ["https://example.com/other.xml"], "keywords": ["python"]}},
    ],
)
def test_digest_changes_with_the_spec(changes):
    assert spec(**changes).digest() != spec().digest()


@pytest.mark.parametrize(("before", "after"), [(None, 10), (10, 11), (11, None)])
def test_digest_changes_when_lease_changes(before, after):
    assert spec(lease=before).digest() != spec(lease=after).digest()


@pytest.mark.parametrize(
    "original",
    [
        spec(),
        spec(item_limit=100, lease=40, retention_days=30),
        spec(priority="high", recollect_after=86_400, schedule={"every": 600}),
    ],
)
def test_json_round_trip_through_the_nodes_reader(original):
    data = json.loads(json.dumps(original.to_json()))  # as it crosses HTTP
    restored = SubscriberSpecSchema().load(data)
    assert restored == original
    assert restored.digest() == original.digest()


def test_the_reader_declares_every_field_of_the_spec():
    assert set(SubscriberSpecSchema().fields) == {f.name for f in dataclasses.fields(spec())}


def test_the_reader_refuses_unknown_keys():
    with pytest.raises(ValidationError) as refused:
        SubscriberSpecSchema().load({**spec().to_json(), "state": "running"})
    assert list(refused.value.messages) == ["state"]


def test_the_reader_defaults_missing_limits():
    data = {"crawler_id": 7, "user_id": 3, "source": "rss", "query": spec().query}
    assert SubscriberSpecSchema().load(data) == spec()
