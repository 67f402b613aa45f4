"""Lease renewals on two clocks: a node stops storing under its leases before the hub, which
never reads the node's clock, hands them elsewhere; and the renewal's header and tracker."""

from __future__ import annotations

import pytest

from blackwidow.core.node_protocol import ProtocolError, Renewal, Shard
from blackwidow.monitor.quota import lost_lease_until
from spawn.pool.renewals import Renewals, in_force
from tests.support import FakeClock

LEASE_AFTER = 5.0


@pytest.mark.parametrize(
    ("renewed_at", "now", "expected"),
    [(None, 0.0, False), (10.0, 10.0, True), (10.0, 14.9, True), (10.0, 15.0, False)],
)
def test_a_lease_is_in_force_for_lease_after_from_its_renewal(renewed_at, now, expected):
    assert in_force(renewed_at, LEASE_AFTER, now) is expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [(None, None), ("", None), ("2.5 abc@1.0", Renewal("abc@1.0", 2.5))],
)
def test_a_renewal_header_parses(text, expected):
    assert Renewal.parse(text) == expected
    if expected is not None:
        assert Renewal.parse(str(expected)) == expected


@pytest.mark.parametrize("text", ["abc", "2.5", "0 abc@1", "-1 abc@1", "nan abc@1", "1e9 abc@1"])
def test_a_malformed_renewal_header_is_refused(text):
    with pytest.raises(ProtocolError):
        Renewal.parse(text)


def test_only_this_process_tokens_from_the_past_renew_and_never_backwards():
    clock = FakeClock(100.0)
    renewals, other = Renewals(clock), Renewals(clock)
    first = renewals.token()
    clock.now = 103.0
    second = renewals.token()
    renewals.renew(Shard(), other.token(), LEASE_AFTER)  # another process's token
    assert not renewals.in_force("key")
    renewals.renew(Shard(), second, LEASE_AFTER)
    renewals.renew(Shard(), first, LEASE_AFTER)  # a late, older renewal moves nothing back
    clock.now = 107.9
    assert renewals.in_force("key")
    clock.now = 108.0
    assert not renewals.in_force("key")
    future = f"{renewals.incarnation}@{clock.now + 50!r}"
    renewals.renew(Shard(), future, LEASE_AFTER)  # never counted from a time not yet come
    assert not renewals.in_force("key")
    renewals.renew(Shard(), renewals.token(), LEASE_AFTER)
    renewals.clear()
    assert not renewals.in_force("key")


def test_a_shards_poll_renews_only_the_leases_it_owns():
    clock = FakeClock(10.0)
    renewals = Renewals(clock)
    keys = [f"key-{n}" for n in range(20)]
    renewals.renew(Shard(0, 2), renewals.token(), LEASE_AFTER)
    assert [renewals.in_force(k) for k in keys] == [Shard(0, 2).owns(k) for k in keys]


# -- the rule on two clocks ----------------------------------------------------------------

# Each poll: (sent, reaches the node, answer back at the hub or None when lost), in real
# seconds. The hub echoes the token of the last answer it had when it sent the poll.
POLLS = {
    "steady polls": [(0, 0.1, 0.2), (2, 2.1, 2.2), (4, 4.1, 4.2)],
    "the last answer lost": [(0, 0.1, 0.2), (2, 2.1, 2.2), (4, 4.1, None), (6, 6.1, None)],
    "a poll held in the network arrives last": [(0, 0.1, 0.2), (2, 2.1, 2.2), (2.5, 30.0, None)],
    "answers that crawl back": [(0, 0.1, 1.9), (2, 2.1, 5.0), (4, 4.1, 9.0)],
    "every answer lost": [(0, 0.1, None), (2, 2.1, None)],
}
CLOCKS = {"hub ahead": (1e6, 3.0), "node ahead": (0.5, 7e5)}  # (hub offset, node offset)


@pytest.mark.parametrize("offsets", CLOCKS.values(), ids=CLOCKS.keys())
@pytest.mark.parametrize("polls", POLLS.values(), ids=POLLS.keys())
def test_a_lost_node_stops_storing_a_lease_after_before_the_hub_hands_it_on(polls, offsets):
    hub_offset, node_offset = offsets
    node_clock = FakeClock()
    renewals = Renewals(node_clock)
    events = []
    for index, (sent, arrives, back) in enumerate(polls):
        events += [(sent, 0, index), (arrives, 1, index)]
        if back is not None:
            events.append((back, 2, index))
    echoed: dict[int, str | None] = {}
    tokens: dict[int, str] = {}
    received: tuple[str, float] | None = None  # the hub's: (token, when, on its clock)
    for real, kind, index in sorted(events):
        if kind == 0:
            echoed[index] = received[0] if received else None
        elif kind == 1:
            node_clock.now = real + node_offset
            if echoed[index] is not None:
                renewals.renew(Shard(), echoed[index], LEASE_AFTER)
            tokens[index] = renewals.token()
        else:
            received = (tokens[index], real + hub_offset)
    hub_started_at = hub_offset  # the hub's leadership began at real time 0
    last_answer_at = received[1] if received else hub_started_at
    handed_on_at = lost_lease_until(last_answer_at, LEASE_AFTER) - hub_offset  # real time
    node_clock.now = handed_on_at - LEASE_AFTER + node_offset  # a lease_after to spare
    assert not renewals.in_force("key")
