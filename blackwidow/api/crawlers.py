"""REST: a user's crawlers (their items: blackwidow.api.items)."""

from __future__ import annotations

import time
from functools import partial
from typing import Any

from flask.views import MethodView
from flask_smorest import Blueprint

from blackwidow import crawlers
from blackwidow.api.context import caller, hub, transaction
from blackwidow.api.list_args import CrawlerListArgs
from blackwidow.api.paging import LINK_HEADER, next_link, paged
from blackwidow.api.schemas import (
    CrawlerBatch,
    CrawlerBatchOut,
    CrawlerCreate,
    CrawlerFeedsOut,
    CrawlerOut,
    CrawlerUpdate,
)
from blackwidow.models import Crawler
from blackwidow.monitor import rates

_COMPUTED = ("node_id", "next_start", "rate", "rate_window_seconds")
_CRAWLER_FIELDS = [name for name in CrawlerOut().fields if name not in _COMPUTED]

blp = Blueprint("crawlers", __name__, url_prefix="/api/v1/crawlers", description="Crawlers")


def shown_rate(crawler: Crawler, now: float) -> rates.Rate:
    """The crawler's rate over the hub's window at `now` (epoch seconds), read from the
    samples the monitor keeps, so it falls to zero without a write (the dashboard's too)."""
    samples = rates.samples_of(crawler.rate_samples)
    return rates.rate(samples, now, hub().settings.rate_window)


def crawler_out(crawler: Crawler, node_id: int | None) -> dict[str, Any]:
    now = time.time()
    rate = shown_rate(crawler, now)
    return {
        **{name: getattr(crawler, name) for name in _CRAWLER_FIELDS},
        "node_id": node_id,
        "next_start": crawlers.next_start(crawler, now),
        "rate": round(rate.per_second, 6),
        "rate_window_seconds": round(rate.window, 1),
    }


@blp.route("")
class Crawlers(MethodView):
    @blp.arguments(CrawlerListArgs(), location="query")
    @blp.response(200, CrawlerOut(many=True), headers=LINK_HEADER)
    def get(self, args: dict[str, Any]) -> tuple[list[dict[str, Any]], dict[str, str]]:
        """The caller's crawlers (the admin's: everyone's) in id order, a page at a time."""
        with transaction() as session:
            read = partial(crawlers.listing_with_nodes, session, caller())
            listed, cursor = paged("crawlers", args, read, lambda row: row[0].id)
            return [crawler_out(crawler, node_id) for crawler, node_id in listed], next_link(cursor)

    @blp.arguments(CrawlerCreate())
    @blp.response(201, CrawlerOut)
    def post(self, data: dict[str, Any]) -> dict[str, Any]:
        """Create a crawler for the caller; the monitor routes it to a node. The answer is
        built once committed: SQLite's write lock is held for the writes alone."""
        with transaction() as session:
            crawler = crawlers.create(session, caller(), data)
        return crawler_out(crawler, None)


@blp.route("/batch")
class CrawlerBatchView(MethodView):
    @blp.arguments(CrawlerBatch())
    @blp.response(201, CrawlerBatchOut)
    def post(self, data: dict[str, Any]) -> dict[str, Any]:
        """Create many crawlers at once, all or none: an invalid entry creates nothing, and
        the error names it (`crawlers.3.query.feeds.0`). Answers them in request order."""
        with transaction() as session:
            made = crawlers.create_batch(session, caller(), data["crawlers"])
        return {"crawlers": [crawler_out(c, None) for c in made]}


@blp.route("/<int:crawler_id>")
class CrawlerById(MethodView):
    @blp.response(200, CrawlerOut)
    def get(self, crawler_id: int) -> dict[str, Any]:
        """One of the caller's crawlers."""
        with transaction() as session:
            crawler = crawlers.get(session, caller(), crawler_id)
            return crawler_out(crawler, crawlers.node_of(session, crawler_id))

    @blp.arguments(CrawlerUpdate())
    @blp.response(200, CrawlerOut)
    def patch(self, edits: dict[str, Any], crawler_id: int) -> dict[str, Any]:
        """Change a crawler; its node gets the new spec at the next monitor cycle."""
        with transaction() as session:
            crawler = crawlers.edit(session, caller(), crawler_id, edits)
            return crawler_out(crawler, crawlers.node_of(session, crawler_id))

    @blp.response(204)
    def delete(self, crawler_id: int) -> None:
        """Delete a crawler; its node drops its subscriber at the next monitor cycle."""
        with transaction() as session:
            crawlers.remove(session, crawlers.get(session, caller(), crawler_id))


@blp.route("/<int:crawler_id>/feeds")
class CrawlerFeeds(MethodView):
    @blp.response(200, CrawlerFeedsOut)
    def get(self, crawler_id: int) -> dict[str, Any]:
        """Each feed's health, as the node running the crawler tells it now."""
        with transaction() as session:
            crawlers.get(session, caller(), crawler_id)
            node = crawlers.running_node(session, crawler_id)
        return crawlers.feed_health(hub().nodes, node, crawler_id)
