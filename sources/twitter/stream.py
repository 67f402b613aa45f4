"""The filtered stream of one X app: one connection for every streaming crawler of a credential.

X allows one stream connection per app, and rules belong to the app, so the hub routes every
streaming crawler of a credential to one node and this source holds the connection there.
Subscribers joining or leaving change only their rules, from a second thread, while the
stream stays connected; tweets reach the crawlers whose rules they matched (`matching_rules`).

A refused connection (sources.twitter.connection) waits as sources.reconnect says, stays
interruptible, and shows on every crawler's status.
"""

from __future__ import annotations

import logging
import threading
import time
from datetime import UTC, datetime
from typing import Any

import tweepy

from sources import api_session
from sources.backoff import Backoff
from sources.fetch.fetcher import GuardedFetcher
from sources.model import Item, SourceSink, SubscriberSpec
from sources.observer import UNOBSERVED, SourceObserver
from sources.reconnect import ReconnectPolicy, short_error
from sources.twitter import client as twitter_client
from sources.twitter import rules as twitter_rules
from sources.twitter.connection import Connection
from sources.twitter.items import EXPANSIONS, TWEET_FIELDS, USER_FIELDS, tweet_item, users_by_id
from sources.twitter.query import RuleLimits, rule_limits
from sources.twitter.rules import Group, RemoteRule, TermTooLong

log = logging.getLogger(__name__)

SETTLE = 0.3  # seconds without rule changes before they are sent: a hub's pushes come in a burst
RULES_RETRY = Backoff(first=1.0, cap=60.0)  # seconds between rules calls X refused
# seconds: a stopped source sends its last rules call within this or not at all, so a stop
# never leaves a thread waiting on an X that does not answer
CLEANUP_WAIT = 10.0
# seconds after each connect: by then an earlier holder's last rules call has landed (it is sent
# within CLEANUP_WAIT of its stop, and connects within 5 s), so the rules are reconciled again
RECHECK_AFTER = 20.0


class TwitterStreamSource:
    def __init__(
        self,
        key: str,
        credential: dict[str, Any],
        fetcher: GuardedFetcher,
        rate_limit_wait: float,
        recheck_after: float = RECHECK_AFTER,
        observer: SourceObserver = UNOBSERVED,
    ) -> None:
        self.key = key
        self._credential = credential
        self._fetcher = fetcher
        self._limits: RuleLimits = rule_limits(credential)
        # rules are the app's, managed over their own session beside the stream's
        self._rules_client = twitter_client.x_client(tweepy.StreamingClient, credential, fetcher)
        self._policy = ReconnectPolicy(rate_limit_wait, observer, "twitter")
        self._lock = threading.Lock()
        self._groups: dict[str, Group] = {}  # in the order crawlers first asked for them
        self._members: dict[str, set[int]] = {}
        self._group_of: dict[int, str] = {}
        self._served: set[str] = set()  # every group it held: whose rules it owns when it leaves
        self._refused: dict[int, str] = {}  # crawler -> why its terms make no rule
        self._by_value: dict[str, set[int]] = {}  # rule value -> crawlers
        self._rule_values: dict[str, str] = {}  # rule id -> value, as X holds them
        self._changed = threading.Event()
        self._stop = threading.Event()
        self._stopped_at = 0.0  # time.monotonic() of stop(), whence CLEANUP_WAIT runs
        self._connection: Connection | None = None
        self._recheck_after = recheck_after
        self._recheck: threading.Timer | None = None
        self._sink: SourceSink | None = None
        self.connects = 0

    # -- subscribers ---------------------------------------------------------------------------

    def attach(self, spec: SubscriberSpec) -> None:
        crawler_id = spec.crawler_id
        try:
            wanted = twitter_rules.group(
                spec.query["terms"], spec.query["languages"], self._limits.max_rule_length
            )
        except TermTooLong as error:
            with self._lock:
                self._leave(crawler_id)
                self._refused[crawler_id] = str(error)
                self._by_value = twitter_rules.crawlers_by_value(self._groups, self._members)
            self._changed.set()
            return
        with self._lock:
            if self._group_of.get(crawler_id) == wanted.id:
                return
            self._leave(crawler_id)
            self._groups.setdefault(wanted.id, wanted)
            self._served.add(wanted.id)
            self._members.setdefault(wanted.id, set()).add(crawler_id)
            self._group_of[crawler_id] = wanted.id
            self._by_value = twitter_rules.crawlers_by_value(self._groups, self._members)
        self._changed.set()

    def detach(self, crawler_id: int) -> None:
        with self._lock:
            self._leave(crawler_id)
            self._by_value = twitter_rules.crawlers_by_value(self._groups, self._members)
        self._changed.set()

    def _leave(self, crawler_id: int) -> None:
        self._refused.pop(crawler_id, None)
        group_id = self._group_of.pop(crawler_id, None)
        if group_id is None:
            return
        members = self._members[group_id]
        members.discard(crawler_id)
        if not members:
            del self._members[group_id], self._groups[group_id]

    # -- life ----------------------------------------------------------------------------------

    def start(self, sink: SourceSink) -> None:
        self._sink = sink
        for target, name in ((self._keep_rules, "x-rules"), (self._keep_streaming, "x-stream")):
            threading.Thread(target=target, name=f"{name}-{self.key}", daemon=True).start()

    def stop(self) -> None:
        """Disconnect, and hang up at once rather than at the next keep-alive. Returns without
        waiting on X: the rules thread, woken, deletes the rules of the crawlers that left."""
        if not self._stop.is_set():
            self._stopped_at = time.monotonic()
        self._stop.set()
        self._changed.set()
        with self._lock:
            connection, recheck = self._connection, self._recheck
        if recheck is not None:
            recheck.cancel()
        if connection is not None:
            connection.disconnect()
            api_session.hang_up(connection.session)  # free the app's one connection now

    def snapshot(self) -> list[Item]:
        return []  # a stream has no past to replay

    # -- rules ---------------------------------------------------------------------------------

    def _keep_rules(self) -> None:
        failures = 0
        while self._settled():
            try:
                self._reconcile()
                failures = 0
            except Exception as error:  # the API or the network: say so, try again later
                failures += 1
                message = f"stream rules: {short_error(error)}"
                log.warning("rules update failed key=%s error=%s", self.key, message)
                self._report(message)
                self._changed.set()
                self._stop.wait(RULES_RETRY.delay(failures))
        self._leave_app()

    def _settled(self) -> bool:
        """Wait for rule changes, then for a burst of them to end; False once stopped."""
        self._changed.wait()
        while self._changed.is_set() and not self._stop.is_set():
            self._changed.clear()
            self._stop.wait(SETTLE)
        return not self._stop.is_set()

    def _remote_rules(self) -> list[RemoteRule]:
        return [RemoteRule(r.id, r.value, r.tag) for r in self._rules_client.get_rules().data or []]

    def _leave_app(self) -> None:
        """Stopped after its last crawler left: delete the rules this source owns, so they stop
        counting against the app's cap. Stopped with crawlers still here (the node lost its
        hub, or the credential was replaced), it leaves them to whoever runs those crawlers
        next, who reconciles them anyway."""
        deadline = self._stopped_at + CLEANUP_WAIT  # a call in flight at stop used some of it
        with self._lock:
            if self._group_of or self._refused:
                return
            groups, ids = set(self._served), set(self._rule_values)
        try:
            owned = twitter_rules.owned(self._remote_rules(), groups, ids)
            if owned and time.monotonic() >= deadline:
                raise TimeoutError(f"no call sent after {CLEANUP_WAIT:g}s")
            if owned:
                self._rules_client.delete_rules(owned)
                log.info("rules deleted on stopping key=%s deleted=%s", self.key, len(owned))
        except Exception as error:  # the next start on this app reconciles them
            log.warning("rules left on stopping key=%s error=%s", self.key, short_error(error))

    def _reconcile(self) -> None:
        """Bring the app's rules to what the subscribers want: GET, then delete and add the
        difference. Run at start too, which is how rules left by an earlier run are settled."""
        client = self._rules_client
        with self._lock:
            groups = list(self._groups.values())
        existing = self._remote_rules()
        plan = twitter_rules.plan(groups, existing, self._limits.max_rules)
        with self._lock:  # kept rules route at once, even before the changes are through
            self._rule_values = {**self._rule_values, **plan.keep}
        if plan.delete_ids:
            client.delete_rules(plan.delete_ids)
        values = dict(plan.keep)
        refused: dict[str, str] = {}  # value -> X's reason
        if plan.add:
            answer = client.add_rules([tweepy.StreamRule(value, tag) for value, tag in plan.add])
            values.update((rule.id, rule.value) for rule in answer.data or [])
            for error in answer.errors or []:
                if error.get("title") == "DuplicateRule" and error.get("id"):
                    values[str(error["id"])] = error.get("value", "")  # someone's rule: share it
                else:
                    refused[error.get("value", "")] = error.get("title", "refused")
        log.info(
            "rules updated key=%s kept=%s deleted=%s added=%s",
            self.key, len(plan.keep), len(plan.delete_ids), len(plan.add) - len(refused),
        )  # fmt: skip
        with self._lock:
            self._rule_values = values
        self._report_rule_problems(set(plan.over_cap), refused)

    def _report_rule_problems(self, over_cap: set[str], refused: dict[str, str]) -> None:
        with self._lock:
            problems: dict[int, str | None] = dict(self._refused)
            for group_id, members in self._members.items():
                reason = None
                if group_id in over_cap:
                    reason = f"no room for its rules: the app's {self._limits.max_rules} are used"
                elif bad := [refused[v] for v in self._groups[group_id].values if v in refused]:
                    reason = f"X refused its rule ({bad[0]})"
                for crawler_id in members:
                    problems[crawler_id] = reason
        for crawler_id, reason in problems.items():
            self._report(reason, [crawler_id])

    # -- stream --------------------------------------------------------------------------------

    def _keep_streaming(self) -> None:
        while not self._stop.is_set():
            connection = Connection(self, self._credential, self._fetcher)
            with self._lock:
                self._connection = connection
            if self._stop.is_set():
                return
            connection.filter(
                tweet_fields=TWEET_FIELDS, expansions=EXPANSIONS, user_fields=USER_FIELDS
            )
            if self._stop.is_set():
                return
            wait, message = connection.next_wait(self._policy)
            log.warning("stream refused key=%s reason=%s", self.key, message)
            self._report(message)
            self._stop.wait(wait)

    def connected(self) -> None:
        self.connects += 1
        self._policy.connected()
        log.info("stream connected key=%s connects=%s", self.key, self.connects)
        self._report(None)
        self._recheck_later()

    def _recheck_later(self) -> None:
        """The app's one connection was free, so whoever held it before (this node's previous
        source for the key, or another node's) has stopped, and may still be deleting the
        rules it owned, ours now too. Reconciling once more after RECHECK_AFTER restores them."""
        timer = threading.Timer(self._recheck_after, self._changed.set)
        timer.daemon = True
        with self._lock:
            previous, self._recheck = self._recheck, timer
        if previous is not None:
            previous.cancel()
        timer.start()

    def lost(self, message: str) -> None:
        if self._stop.is_set():  # our own hang-up
            return
        log.warning("stream interrupted key=%s reason=%s", self.key, message)
        self._report(message)

    def received(self, response: tweepy.StreamResponse) -> None:
        """Route one tweet to the crawlers whose rules it matched."""
        if response.data is None or self._stop.is_set():
            return
        with self._lock:
            crawler_ids: set[int] = set()
            for rule in response.matching_rules or []:
                value = self._rule_values.get(str(rule.id))
                if value is not None:
                    crawler_ids |= self._by_value.get(value, set())
                else:  # a rule added in a call whose answer was lost: its tag still says whose
                    crawler_ids |= self._members.get(twitter_rules.group_of_tag(rule.tag), set())
        if not crawler_ids or self._sink is None:
            return
        users = users_by_id(user.data for user in (response.includes or {}).get("users", []))
        item = tweet_item(response.data.data, users, datetime.now(UTC))
        self._sink.deliver([item], crawler_ids)

    def _report(self, message: str | None, to: list[int] | None = None) -> None:
        if self._sink is not None:
            self._sink.report_error(message, to)
