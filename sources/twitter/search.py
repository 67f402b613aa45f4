"""Recent-search polling, for credentials without filtered-stream access.

Equal searches share this source (its key is the canonical terms). Each poll asks only for
tweets newer than the newest it has seen (`since_id`), so nothing is fetched twice; the very
first poll takes only the newest page rather than a week of history.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from datetime import UTC, datetime
from typing import Any

import tweepy

from sources import timetable
from sources.fetch.fetcher import GuardedFetcher
from sources.model import Item, SourceSink, SubscriberSpec
from sources.reconnect import ReconnectPolicy, describe_http_error, short_error
from sources.threaded import ThreadedSource
from sources.twitter import rules as twitter_rules
from sources.twitter.client import x_client
from sources.twitter.items import EXPANSIONS, TWEET_FIELDS, USER_FIELDS, tweet_item, users_by_id
from sources.twitter.query import rule_limits

log = logging.getLogger(__name__)

PAGE_SIZE = 100  # X's largest page
MAX_PAGES = 10  # per query and poll: a search this far behind skips its oldest new tweets
RECENT_ITEMS = 1000  # what a crawler joining the shared search later is given, newest last


class TwitterSearchSource(ThreadedSource):
    thread_name = "x-search"

    def __init__(
        self,
        key: str,
        spec: SubscriberSpec,
        credential: dict[str, Any],
        fetcher: GuardedFetcher,
        interval: float,
        rate_limit_wait: float,
    ) -> None:
        super().__init__(key)
        self._client = x_client(tweepy.Client, credential, fetcher, return_type=dict)
        self._queries = twitter_rules.pack(
            spec.query["terms"], spec.query["languages"], rule_limits(credential).max_query_length
        )
        self._interval = interval
        self._schedules = timetable.SubscriberSchedules(interval)
        self._replanned = threading.Event()  # set when they change, or on stop
        self._policy = ReconnectPolicy(rate_limit_wait)
        self._since: dict[str, str] = {}  # query -> newest tweet id seen
        self._recent: deque[Item] = deque(maxlen=RECENT_ITEMS)
        self._recent_lock = threading.Lock()

    def snapshot(self) -> list[Item]:
        """What the search found lately, so a crawler joining it gets what the first one got."""
        with self._recent_lock:
            return list(self._recent)

    def attach(self, spec: SubscriberSpec) -> None:
        """The search polls at the earliest tick among its subscribers' schedules."""
        if self._schedules.attach(spec.crawler_id, spec.schedule):
            self._replanned.set()

    def detach(self, crawler_id: int) -> None:
        if self._schedules.detach(crawler_id):
            self._replanned.set()

    def _interrupt(self) -> None:
        self._replanned.set()

    def _run(self, sink: SourceSink) -> None:
        while not self._stop.is_set():
            polled_at = time.time()
            # a failed round backs off from the tick, or the interval if shorter (see RssSource)
            next_at = self._schedules.next_poll_at(polled_at)
            wait = self._round(sink, min(next_at - polled_at, self._interval))
            if wait is None:
                self._sleep_until_tick(polled_at)
            else:
                self._stop.wait(wait)

    def _sleep_until_tick(self, polled_at: float) -> None:
        """After a good round, wait for the next tick, planned again whenever a subscriber
        comes or goes (its schedule may tick sooner, or the one that did may have left)."""
        while not self._stop.is_set():
            self._replanned.clear()
            left = self._schedules.next_poll_at(polled_at) - time.time()
            if left <= 0:
                return
            self._replanned.wait(left)

    def _round(self, sink: SourceSink, wait: float) -> float | None:
        """Poll every query once; None when it went well, else the seconds to wait (at least
        `wait`, unless the provider's rate limit resets sooner)."""
        try:
            for query in self._queries:
                self.poll(query, sink)
            self._policy.connected()
            sink.report_error(None)
            return None
        except tweepy.TooManyRequests as error:
            wait = self._policy.after_http_error(429, _until_reset(error))
            sink.report_error(describe_http_error("X", 429, wait))
        except tweepy.HTTPException as error:
            status = error.response.status_code
            wait = max(wait, self._policy.after_http_error(status))
            sink.report_error(describe_http_error("X", status, wait))
        except Exception as error:  # the network or the guard
            wait = max(wait, self._policy.after_network_error())
            sink.report_error(f"search failed: {short_error(error)}")
            log.warning("search failed key=%s error=%s", self.key, short_error(error))
        return wait

    def poll(self, query: str, sink: SourceSink) -> None:
        """Fetch what is new for one query, page by page, and deliver it oldest first."""
        since = self._since.get(query)
        token: str | None = None
        newest: str | None = None
        found: list[Item] = []
        for _page in range(MAX_PAGES if since else 1):
            answer = self._client.search_recent_tweets(
                query,
                since_id=since,
                next_token=token,
                max_results=PAGE_SIZE,
                tweet_fields=TWEET_FIELDS,
                expansions=EXPANSIONS,
                user_fields=USER_FIELDS,
            )
            meta = answer.get("meta", {})
            newest = newest or meta.get("newest_id")
            users = users_by_id(answer.get("includes", {}).get("users", []))
            now = datetime.now(UTC)
            found += [tweet_item(tweet, users, now) for tweet in answer.get("data", [])]
            token = meta.get("next_token")
            if not token:
                break
        else:
            if since:  # (a first poll takes one page on purpose)
                log.warning("search behind key=%s: older new tweets skipped", self.key)
        if found:
            with self._recent_lock:
                self._recent.extend(reversed(found))
            sink.deliver(found[::-1])
        if newest:
            self._since[query] = newest


def _until_reset(error: tweepy.TooManyRequests) -> float | None:
    """Seconds until X's rate-limit window resets, from its `x-rate-limit-reset` header."""
    reset = error.response.headers.get("x-rate-limit-reset")
    try:
        return max(0.0, int(reset) - time.time()) if reset else None
    except ValueError:
        return None
