"""The monitor's leader lock on each back end: one holder at a time, even when hubs race for it."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from datetime import timedelta
from subprocess import PIPE

import pytest
from sqlalchemy import delete, text
from sqlalchemy.orm import Session, sessionmaker

from blackwidow import db
from blackwidow.core.node_protocol import Shard
from blackwidow.models import MonitorLock, utcnow
from blackwidow.monitor import holders, leader
from blackwidow.monitor.loop import MonitorLoop
from tests.support import wait_until

TTL = 10.0


@pytest.fixture
def sessions(database_url: str) -> Iterator[sessionmaker[Session]]:
    engine = db.make_engine(database_url)
    yield db.make_sessions(engine)
    engine.dispose()


def lead(
    sessions: sessionmaker[Session], holder: str, after: float = 0.0, name: str = leader.LOCK
) -> int | None:
    """The lock's epoch when `holder` leads as it asks `after` seconds from now, else None."""
    with sessions.begin() as session:
        return leader.try_lead(session, holder, utcnow() + timedelta(seconds=after), TTL, name)


def lock(sessions: sessionmaker[Session]) -> MonitorLock:
    with sessions() as session:
        row = session.get(MonitorLock, leader.LOCK)
        assert row is not None
        return row


def test_one_holder_until_its_lease_expires(sessions):
    assert lead(sessions, "a")
    assert not lead(sessions, "b")
    assert lead(sessions, "a", after=TTL / 2)  # renewed
    assert not lead(sessions, "b", after=TTL)
    assert lead(sessions, "b", after=2 * TTL)  # a stopped renewing
    assert not lead(sessions, "a", after=2 * TTL)
    held = lock(sessions)
    assert held.holder == "b" and held.expires_at is not None
    assert held.expires_at.tzinfo is not None  # read back aware, whatever the back end


def test_only_the_holder_records_cycles_and_releasing_frees_the_lock(sessions):
    assert lead(sessions, "a")
    at = utcnow()
    with sessions.begin() as session:
        leader.record_cycle(session, "b", at, 9.0)
        leader.record_cycle(session, "a", at, 1.5)
    assert (lock(sessions).last_cycle_at, lock(sessions).last_cycle_seconds) == (at, 1.5)
    with sessions.begin() as session:
        leader.release(session, "b")
    assert lock(sessions).holder == "a"
    with sessions.begin() as session:
        leader.release(session, "a")
    assert lock(sessions).holder is None
    assert lead(sessions, "b")


def test_hubs_racing_for_a_free_lock_elect_exactly_one(sessions):
    holders = [f"hub{n}" for n in range(8)]
    start = threading.Barrier(len(holders))
    won: dict[str, bool] = {}

    def race(holder: str) -> None:
        start.wait()
        won[holder] = lead(sessions, holder)

    threads = [threading.Thread(target=race, args=(holder,)) for holder in holders]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert sorted(won) == holders
    winners = [holder for holder, leads in won.items() if leads]
    assert len(winners) == 1
    assert lock(sessions).holder == winners[0]


def test_the_epoch_rises_when_the_lock_changes_hands_not_when_it_is_renewed(sessions):
    first = lead(sessions, "a")
    assert first is not None
    assert lead(sessions, "a", after=TTL / 2) == first
    second = lead(sessions, "b", after=2 * TTL)
    assert second == first + 1
    with sessions.begin() as session:
        leader.release(session, "b")
    assert lead(sessions, "b", after=2 * TTL) == second + 1


def test_each_shard_has_its_own_lock(sessions):
    names = [leader.lock_name(Shard(i, 3)) for i in range(3)]
    assert leader.lock_name(Shard()) == leader.LOCK  # the unsharded lock keeps its name
    assert lead(sessions, "a", name=names[0]) is not None
    assert lead(sessions, "b", name=names[1]) is not None
    assert lead(sessions, "b", name=names[0]) is None
    assert lead(sessions, "a", name=names[2]) is not None


def test_hub_processes_share_the_shards_fairly(sessions):
    def share(holder: str, after: float = 0.0) -> int:
        with sessions.begin() as session:
            now = utcnow() + timedelta(seconds=after)
            return leader.fair_share(session, holder, now, TTL, 5)

    assert share("h:1:aaaa") == 5
    assert share("h:2:bbbb") == 3  # two processes: ceil(5 / 2)
    assert share("h:3:cccc") == 2
    assert share("h:1:aaaa", after=2 * TTL) == 5  # the others stopped announcing themselves
    with sessions.begin() as session:
        leader.leave(session, "h:1:aaaa")
    assert share("h:2:bbbb", after=2 * TTL) == 5


@pytest.fixture
def ended_pid() -> int:
    """The pid of a process of this machine that has ended (and been reaped)."""
    done = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    return int(done.stdout)


@pytest.fixture
def live_pid() -> Iterator[int]:
    running = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=PIPE)
    yield running.pid
    running.communicate()


def lead_from(
    sessions: sessionmaker[Session], holder: str, place: str | None, name: str = leader.LOCK
) -> int | None:
    with sessions.begin() as session:
        return leader.try_lead(session, holder, utcnow(), TTL, name, place)


def test_a_hub_restarted_on_its_machine_takes_a_dead_holder_s_lock_at_once(sessions, ended_pid):
    here = holders.here()
    assert here is not None  # Linux: the tests run where /proc tells
    dead = f"hub-host:{ended_pid}:0badf00d"
    first = lead_from(sessions, dead, here)
    assert first is not None

    assert lead_from(sessions, "other-host:1:aaaaaaaa", "another-boot/1") is None
    assert lead_from(sessions, "no-proc:1:bbbbbbbb", None) is None
    assert lead_from(sessions, f"hub-host:{os.getpid()}:cccccccc", here) == first + 1
    assert lock(sessions).holder_place == here


def test_a_live_holder_or_one_elsewhere_keeps_its_lock(sessions, live_pid, ended_pid):
    here = holders.here()
    assert lead_from(sessions, f"hub-host:{live_pid}:11111111", here) is not None
    assert lead_from(sessions, f"hub-host:{os.getpid()}:22222222", here) is None

    name = leader.lock_name(Shard(1, 2))
    assert lead_from(sessions, f"far-host:{ended_pid}:33333333", "another-boot/1", name)
    assert lead_from(sessions, f"hub-host:{os.getpid()}:44444444", here, name) is None


def test_a_dead_holder_s_presence_stops_counting_on_its_machine(sessions, ended_pid):
    here = holders.here()
    now = utcnow()
    with sessions.begin() as session:
        assert leader.fair_share(session, f"h:{ended_pid}:55555555", now, TTL, 4, here) == 4
    with sessions.begin() as session:
        assert leader.fair_share(session, f"h:{os.getpid()}:66666666", now, TTL, 4, here) == 4


def waiting_on_a_lock(sessions: sessionmaker[Session]) -> bool:
    """Whether a connection to this test's database waits for a lock (another test's, on
    another database of the server, does not count)."""
    waiting = text(
        "SELECT count(*) FROM pg_locks JOIN pg_stat_activity USING (pid)"
        " WHERE NOT granted AND datname = current_database()"
    )
    with sessions() as session:
        return bool(session.scalar(waiting))


def holders_of(sessions: sessionmaker[Session], names: list[str]) -> set[str | None]:
    with sessions() as session:
        return {session.get(MonitorLock, name).holder for name in names}  # type: ignore[union-attr]


@pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)
def test_hubs_adding_the_shard_locks_at_once_wait_rather_than_deadlock(hub_app, sessions):
    """Every hub adds and takes the shard locks in one order: a hub waiting for the first
    holds none of the others, so two hubs starting at once never wait on each other."""
    hub = hub_app.extensions["blackwidow"]
    settings = hub.settings.replace(monitor_shards=2, poll_interval=0.2)
    names = [leader.lock_name(Shard(i, 2)) for i in range(2)]
    for _ in range(6):  # each hub's own holder id once chose where it began
        with sessions.begin() as session:
            session.execute(delete(MonitorLock))
        first = sessions()  # another hub starting, mid-transaction
        first.begin()
        leader.ensure(first, names[0])
        loop = MonitorLoop(sessions, settings, hub.alerts)
        loop.start()
        try:
            wait_until(lambda: waiting_on_a_lock(sessions), what="the hub to wait for the lock")
            with sessions.begin() as other:  # the other hub goes on to the next lock
                other.execute(text("SET LOCAL lock_timeout = '3s'"))
                leader.ensure(other, names[1])
            first.commit()
            wait_until(lambda: len(holders_of(sessions, names) - {None}) == 1, what="a leader")
        finally:
            first.close()
            loop.stop()


@pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)
def test_a_hub_removing_another_s_stale_presence_never_waits_on_it(sessions):
    """Hub b, renewing late, removed a's stale row and is about to renew its own; a, meanwhile,
    finds b's row stale. a waits only for its own row, so b's renewal goes through."""
    with sessions.begin() as session:
        for holder in ("host:2:b", "host:1:z"):  # b's row is found first, as it sorts first
            leader.fair_share(session, holder, utcnow(), TTL, 2)
    late = sessions()  # hub b's renewal, in flight
    late.begin()
    late.execute(text("SET LOCAL lock_timeout = '3s'"))
    late.execute(delete(MonitorLock).where(MonitorLock.name == leader.presence_name("host:1:z")))
    errors: list[BaseException] = []

    def share_of_a() -> None:
        try:
            with sessions.begin() as session:  # a, whose clock finds b's row stale
                leader.fair_share(session, "host:1:z", utcnow() + timedelta(seconds=TTL), TTL, 2)
        except BaseException as error:  # reported below
            errors.append(error)

    a = threading.Thread(target=share_of_a)
    a.start()
    try:
        wait_until(lambda: waiting_on_a_lock(sessions), what="a to wait for its own row")
        leader.fair_share(late, "host:2:b", utcnow(), TTL, 2)  # raises if a holds b's row
        late.commit()
    finally:
        late.close()
        a.join(timeout=30)
    assert errors == []


def test_a_new_leader_s_first_poll_counts(hub_app, sessions, caplog):
    """A shard's poll and reconcile threads start once its lock is committed. Started inside
    the transaction taking it, the first poll was fenced against the lock not yet taken, and
    thrown away (`poll not recorded … no longer held at epoch 1`): a fresh hub sent out its
    first crawlers a poll interval late, or more."""
    hub = hub_app.extensions["blackwidow"]
    settings = hub.settings.replace(monitor_shards=4, poll_interval=0.2)
    names = [leader.lock_name(Shard(i, 4)) for i in range(4)]
    loop = MonitorLoop(sessions, settings, hub.alerts)
    with caplog.at_level("WARNING", logger="blackwidow.monitor.loop"):
        loop.start()
        try:
            wait_until(
                lambda: all(cycled_at(sessions, name) for name in names),
                what="a cycle recorded on every shard",
            )
        finally:
            loop.stop()
    assert not [r.getMessage() for r in caplog.records if "not recorded" in r.getMessage()]


def cycled_at(sessions: sessionmaker[Session], name: str) -> object:
    with sessions() as session:
        row = session.get(MonitorLock, name)
        return row and row.last_cycle_at
