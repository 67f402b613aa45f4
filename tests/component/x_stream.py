"""What the X stream tests share: a credential and specs for the fake X, and a stream source
running on a recording sink."""

from __future__ import annotations

from typing import Any

from sources.fetch.fetcher import GuardedFetcher
from sources.model import SubscriberSpec
from sources.twitter.query import TwitterCredential, TwitterQuery
from sources.twitter.stream import RECHECK_AFTER, TwitterStreamSource
from tests.servers.fake_x import FakeX
from tests.support import SinkRecorder

FETCHER = GuardedFetcher(allow_hosts=frozenset({"127.0.0.1"}))
RATE_LIMIT_WAIT = 0.3


def credential(x: FakeX, **extra: Any) -> dict[str, Any]:
    return TwitterCredential().load({"bearer_token": "test-token", "api_base": x.url, **extra})


def spec(crawler_id: int, terms: list[str], **query: Any) -> SubscriberSpec:
    loaded = TwitterQuery().load({"terms": terms, **query})
    return SubscriberSpec(crawler_id=crawler_id, user_id=1, source="twitter", query=loaded)


class Running:
    """A stream source started on a recording sink, stopped at the end of the test."""

    def __init__(
        self,
        x: FakeX,
        *specs: SubscriberSpec,
        rate_limit_wait: float = RATE_LIMIT_WAIT,
        recheck_after: float = RECHECK_AFTER,
        **extra: Any,
    ) -> None:
        self.sink = SinkRecorder()
        self.source = TwitterStreamSource(
            "key", credential(x, **extra), FETCHER, rate_limit_wait, recheck_after
        )
        for one in specs:
            self.source.attach(one)

    def __enter__(self) -> Running:
        self.source.start(self.sink)
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.source.stop()

    def received(self) -> dict[str, set[int]]:
        """tweet id -> the crawlers it was delivered to."""
        seen: dict[str, set[int]] = {}
        for batch, to in zip(self.sink.batches, self.sink.targets, strict=True):
            for item in batch:
                seen.setdefault(item.id, set()).update(to or ())
        return seen


def rule_values(x: FakeX, token: str = "test-token") -> set[str]:
    return {rule["value"] for rule in x.rules(token)}


def our_rule_values(x: FakeX, token: str = "test-token") -> set[str]:
    """The values of the rules Black Widow's tag marks as its own."""
    return {r["value"] for r in x.rules(token) if r.get("tag", "").startswith("blackwidow:")}
