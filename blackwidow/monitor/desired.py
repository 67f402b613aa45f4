"""What should run where (README step 3, "decide"): each runnable crawler's node and spec.

Reads SQL and writes only the lease grants (leases.plan); the choices are the pure modules'
(states, routing, quota). A crawler whose user's budget is spent is not runnable, and becomes
so again on the first cycle after the budget is raised: nothing about it is sticky.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from blackwidow import credentials
from blackwidow.models import Crawler
from blackwidow.monitor import leases
from blackwidow.monitor.routing import assign
from blackwidow.monitor.states import CrawlerFacts, runnable
from sources.model import SubscriberSpec


def desired_subscribers(
    session: Session, live: list[int], routing: str, lease_horizon: float
) -> dict[int, tuple[int, SubscriberSpec]]:
    """crawler id -> (node id, spec) for every crawler that should run now on these nodes."""
    crawlers = list(session.scalars(select(Crawler).order_by(Crawler.id)))
    exhausted = leases.exhausted_users(session, crawlers)
    wanted = [c for c in crawlers if runnable(facts(c, c.user_id in exhausted, False))]
    lease_of = leases.plan(session, crawlers, {c.id for c in wanted}, lease_horizon)
    if not live:
        return {}
    nodes = assign({c.id: c.uuid for c in wanted}, live, routing)
    secrets = credentials.secrets_for(session, wanted)
    return {c.id: (nodes[c.id], spec(c, lease_of.get(c.id), secrets.get(c.id))) for c in wanted}


def facts(crawler: Crawler, user_exhausted: bool, running: bool) -> CrawlerFacts:
    return CrawlerFacts(
        enabled=crawler.enabled,
        failed=crawler.state == "failed",
        item_limit=crawler.item_limit,
        items_collected=crawler.items_collected,
        user_exhausted=user_exhausted,
        running=running,
    )


def spec(crawler: Crawler, lease: int | None, secret: dict[str, Any] | None) -> SubscriberSpec:
    """The spec pushed for a crawler; `secret` is the user's stored credential its query names
    (None: the node uses its own credential of that name)."""
    return SubscriberSpec(
        crawler_id=crawler.id,
        user_id=crawler.user_id,
        source=crawler.source,
        query=crawler.query,
        item_limit=crawler.item_limit,
        lease=lease,
        retention_days=crawler.retention_days,
        credential=secret,
    )
