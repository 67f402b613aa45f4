"""The hub's SQL records: users, their credentials, webhooks and crawlers, nodes, assignments,
subscriber runs, the alert events and their outbox, the monitor's leader lock, and the
cluster's identity.

Everything the hub knows lives here, so a restarted hub resumes where it stopped.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    DateTime,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    TypeDecorator,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

# The largest INTEGER every back end stores: PostgreSQL's is 32-bit, SQLite's 64-bit.
MAX_INTEGER = 2**31 - 1


def utcnow() -> datetime:
    return datetime.now(UTC)


class UtcDateTime(TypeDecorator[datetime]):
    """Stored as naive UTC (SQLite keeps no zone); always read back as aware UTC."""

    impl = DateTime
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Any) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime given to a UTC column")
        return value.astimezone(UTC).replace(tzinfo=None)

    def process_result_value(self, value: datetime | None, dialect: Any) -> datetime | None:
        return None if value is None else value.replace(tzinfo=UTC)


class Base(DeclarativeBase):
    pass


class User(Base):
    """A tenant: owns crawlers and has an item budget across all of them."""

    __tablename__ = "users"

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(200), unique=True)
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    item_limit: Mapped[int | None] = mapped_column(Integer)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime, default=utcnow)


class Credential(Base):
    """A user's secret for a billed source, by name: pushed to nodes, never shown or logged.

    The default repr names no column, so a stray log line cannot print the secret.
    """

    __tablename__ = "credentials"
    __table_args__ = (
        UniqueConstraint("user_id", "source", "name", name="uq_credentials_user_source_name"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    source: Mapped[str] = mapped_column(String(40))
    name: Mapped[str] = mapped_column(String(64))
    secret: Mapped[dict[str, Any]] = mapped_column(JSON)  # the source's credential fields
    created_at: Mapped[datetime] = mapped_column(UtcDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UtcDateTime, default=utcnow)


class Crawler(Base):
    """A user's configuration, plus what the monitor last learned about it from its node."""

    __tablename__ = "crawlers"
    # a user's crawlers in id order: their list pages by id, and deleting a user finds them.
    # AUTOINCREMENT: SQLite would otherwise give a deleted newest crawler's id to the next one,
    # which would inherit the old one's node statuses, runs, items and leases (all by id)
    # a user's crawler names are unique (blackwidow.crawler_names): a unique index, which
    # SQLite adds without rebuilding the table
    __table_args__ = (
        Index("ix_crawlers_user_page", "user_id", "id"),
        Index("uq_crawlers_user_name", "user_id", "name", unique=True),
        {"sqlite_autoincrement": True},
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    uuid: Mapped[str] = mapped_column(String(36), index=True)  # the source key
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(String(200))
    source: Mapped[str] = mapped_column(String(40))
    query: Mapped[dict[str, Any]] = mapped_column(JSON)
    item_limit: Mapped[int | None] = mapped_column(Integer)
    retention_days: Mapped[int | None] = mapped_column(Integer)  # items expire; None: kept
    # seconds per time segment: an item is collected again once its segment has passed
    recollect_after: Mapped[int | None] = mapped_column(Integer)
    enabled: Mapped[bool] = mapped_column(default=True)
    # orders its fetches against others' on an overloaded node (sources.model.PRIORITIES)
    priority: Mapped[str] = mapped_column(String(10), default="normal", server_default="normal")
    # when its data source polls, or the window it runs in (sources.timetable); None: always
    schedule: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    # indexed: the health detail counts crawlers by state, reading the index alone
    state: Mapped[str] = mapped_column(String(20), default="pending", index=True)
    items_collected: Mapped[int] = mapped_column(default=0)
    # items its providers delivered (billed), counted once per subscriber run
    items_delivered: Mapped[int] = mapped_column(default=0, server_default="0")
    # items per second, smoothed over polls: what leases are sized by, not what is shown
    rate: Mapped[float] = mapped_column(default=0.0)
    # the rate shown is read from these: [[count, at, since], ...] at the hub's clock, kept
    # over BLACKWIDOW_RATE_WINDOW by the monitor (blackwidow.monitor.rates); null: none yet
    rate_samples: Mapped[list[list[float]] | None] = mapped_column(JSON)
    lease: Mapped[int] = mapped_column(default=0)  # user-budget ceiling granted (ledger)
    last_error: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UtcDateTime, default=utcnow, onupdate=utcnow)


LIVE_NODE_STATES = ("active", "suspect")  # a suspect node keeps its crawlers
# polled and pushed to, but routed nothing: a leaving node hands its crawlers on
POLLED_NODE_STATES = (*LIVE_NODE_STATES, "leaving")


class Node(Base):
    """A spawn node, known by the URL it registered with."""

    __tablename__ = "nodes"

    id: Mapped[int] = mapped_column(primary_key=True)
    url: Mapped[str] = mapped_column(String(500), unique=True)
    capacity: Mapped[int] = mapped_column(default=100)
    # active | suspect | leaving | left | dead (docs/operations.md "Node states")
    state: Mapped[str] = mapped_column(String(20), default="active")
    # bumped at each registration and when declared dead; every hub call carries it, so a
    # node that was written off (or an older process at the same URL) cannot act on it
    generation: Mapped[int] = mapped_column(default=0, server_default="0")
    registered_at: Mapped[datetime] = mapped_column(UtcDateTime, default=utcnow)
    last_polled_at: Mapped[datetime | None] = mapped_column(UtcDateTime)
    subscribers: Mapped[int] = mapped_column(default=0)
    data_sources: Mapped[int] = mapped_column(default=0)
    # the node process's load at its latest poll answer (spawn.load); None until one reports
    cpu_percent: Mapped[float | None] = mapped_column()
    memory_bytes: Mapped[int | None] = mapped_column(BigInteger)


class Assignment(Base):
    """Which node runs a crawler, and the digest of the spec it acknowledged."""

    __tablename__ = "assignments"

    crawler_id: Mapped[int] = mapped_column(
        ForeignKey("crawlers.id", ondelete="CASCADE"), primary_key=True
    )
    node_id: Mapped[int] = mapped_column(ForeignKey("nodes.id", ondelete="CASCADE"), index=True)
    digest: Mapped[str | None] = mapped_column(String(40))
    pushed_at: Mapped[datetime | None] = mapped_column(UtcDateTime)


class SourceRun(Base):
    """One life of a data source on a node, and the most items it reported delivered for a user.

    Providers bill each item they deliver once, however many of a user's crawlers share the
    connection; this is the user's billed figure, kept like SubscriberRun.
    """

    __tablename__ = "source_runs"

    run: Mapped[str] = mapped_column(String(32), primary_key=True)
    user_id: Mapped[int] = mapped_column(
        ForeignKey("users.id", ondelete="CASCADE"), primary_key=True, index=True
    )
    source: Mapped[str] = mapped_column(String(40))
    delivered: Mapped[int] = mapped_column(default=0, server_default="0")
    # the node and generation that reported the run; pruned once it can report no more
    node_id: Mapped[int | None] = mapped_column(Integer)
    generation: Mapped[int | None] = mapped_column(Integer)
    heard_at: Mapped[datetime | None] = mapped_column(UtcDateTime)  # when its count last grew


class BilledTotal(Base):
    """A user's billed items per source type: each data-source run's growth added once, so
    the runs themselves can go once they can report no more (blackwidow.monitor.pruning)."""

    __tablename__ = "billed_totals"

    user_id: Mapped[int] = mapped_column(
        ForeignKey("users.id", ondelete="CASCADE"), primary_key=True
    )
    source: Mapped[str] = mapped_column(String(40), primary_key=True)
    delivered: Mapped[int] = mapped_column(default=0, server_default="0")


class SubscriberRun(Base):
    """One life of a crawler's subscriber on a node, and the most items it reported delivered.

    A node names a new run each time it creates a subscriber; keeping the highest count per
    run lets the hub add only growth to the crawler's total, however often it hears it.
    """

    __tablename__ = "subscriber_runs"

    run: Mapped[str] = mapped_column(String(32), primary_key=True)
    crawler_id: Mapped[int] = mapped_column(
        ForeignKey("crawlers.id", ondelete="CASCADE"), index=True
    )
    delivered: Mapped[int] = mapped_column(default=0, server_default="0")
    # the node and generation that reported the run; pruned once it can report no more
    node_id: Mapped[int | None] = mapped_column(Integer)
    generation: Mapped[int | None] = mapped_column(Integer)
    heard_at: Mapped[datetime | None] = mapped_column(UtcDateTime)  # when its count last grew


class CrawlerChange(Base):
    """A crawler whose configuration, or what it runs with, changed since the monitor looked.

    Written in the same transaction as the change; the monitor reads the rows, applies them
    to what it holds in memory and deletes exactly the rows it read, so a cycle costs what
    changed rather than what exists. No foreign key: a deleted crawler's change outlives it.
    `source_key` lets each monitor shard pick its own rows.
    """

    __tablename__ = "crawler_changes"

    id: Mapped[int] = mapped_column(primary_key=True)
    crawler_id: Mapped[int] = mapped_column(Integer)
    source_key: Mapped[str] = mapped_column(String(36))


class Webhook(Base):
    """A user's webhook: alert events about the user's crawlers and budget are POSTed to `url`,
    signed with `secret` (never shown or logged; the default repr names no column)."""

    __tablename__ = "webhooks"
    # AUTOINCREMENT: a delivery claimed for a deleted webhook must not find another user's
    # webhook that SQLite gave the same id (blackwidow.alerts.delivery reads hooks by id)
    __table_args__ = {"sqlite_autoincrement": True}

    id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    url: Mapped[str] = mapped_column(String(500))
    secret: Mapped[str] = mapped_column(String(200))
    created_at: Mapped[datetime] = mapped_column(UtcDateTime, default=utcnow)


class AlertEvent(Base):
    """An alert event as it was seen, kept whether or not any webhook receives it (the newest
    blackwidow.alerts.outbox.KEEP_EVENTS): what the dashboard's Recent alerts show, with the
    deliveries made of it beside. `body` is the JSON the webhooks get; `user_id` the user it
    is about, if any (no foreign key: an event is history, kept after its user)."""

    __tablename__ = "alert_events"
    __table_args__ = (Index("ix_alert_events_user", "user_id", "id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    event_id: Mapped[str] = mapped_column(String(36), unique=True)
    event_type: Mapped[str] = mapped_column(String(40))
    user_id: Mapped[int | None] = mapped_column(Integer)
    body: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime, default=utcnow)


class WebhookDelivery(Base):
    """One alert event for one webhook: the outbox row, written in the transaction that saw
    the event, then sent by the delivery worker; kept (bounded) with its outcome afterwards.

    `webhook_id` None is the cluster's webhook (BLACKWIDOW_WEBHOOK_URL). `body` is the exact
    JSON sent, so every retry carries the same bytes, signature and event id.
    """

    __tablename__ = "webhook_deliveries"
    __table_args__ = (Index("ix_webhook_deliveries_due", "status", "next_attempt_at"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    event_id: Mapped[str] = mapped_column(String(36))
    event_type: Mapped[str] = mapped_column(String(40))
    webhook_id: Mapped[int | None] = mapped_column(
        ForeignKey("webhooks.id", ondelete="CASCADE"), index=True
    )
    body: Mapped[str] = mapped_column(Text)
    status: Mapped[str] = mapped_column(String(20), default="pending")  # delivered | failed
    attempts: Mapped[int] = mapped_column(default=0)
    next_attempt_at: Mapped[datetime | None] = mapped_column(UtcDateTime)
    last_status: Mapped[int | None] = mapped_column(Integer)  # the receiver's HTTP status
    last_error: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime, default=utcnow)
    finished_at: Mapped[datetime | None] = mapped_column(UtcDateTime)


class MonitorLock(Base):
    """A leader lock: one row per monitor shard; whoever holds an unexpired lease leads it."""

    __tablename__ = "monitor_lock"

    name: Mapped[str] = mapped_column(String(40), primary_key=True)
    holder: Mapped[str | None] = mapped_column(String(64))
    # the holder's machine boot and pid namespace (blackwidow.monitor.holders): a hub of the
    # same place may take the lock at once when the holder's pid has ended
    holder_place: Mapped[str | None] = mapped_column(String(64))
    expires_at: Mapped[datetime | None] = mapped_column(UtcDateTime)
    # raised each time the lock changes hands; every push carries it, so nodes refuse a
    # leader that lost the lock while it was still pushing
    epoch: Mapped[int] = mapped_column(default=0, server_default="0")
    last_cycle_at: Mapped[datetime | None] = mapped_column(UtcDateTime)
    last_cycle_seconds: Mapped[float | None] = mapped_column()
    # the shard leader's figures (blackwidow.monitor.figures), for every hub's /metrics
    figures: Mapped[dict[str, Any] | None] = mapped_column(JSON)


class ClusterIdentity(Base):
    """The hub database's identity: one row (id 1) with a random id made with the database
    (migration 0020), so a fresh database is a new cluster. Nodes learn it at registration
    and scope their files by it (blackwidow.cluster_identity)."""

    __tablename__ = "cluster_identity"

    id: Mapped[int] = mapped_column(primary_key=True, autoincrement=False)
    cluster_id: Mapped[str] = mapped_column(String(36))
    created_at: Mapped[datetime] = mapped_column(UtcDateTime, default=utcnow)
