"""The crawlers pages: the list with its filters and controls, one crawler with its newest
items, chart, data source and who shares it, and the forms that change or delete a crawler.

Read and written through the functions behind `GET /api/v1/crawlers`, `GET/PATCH/DELETE
/api/v1/crawlers/<id>`, `.../items` and `.../feeds`, with the same isolation: another
user's crawler is missing here as it is there.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import partial
from typing import Any

from flask import flash, redirect, render_template, request, url_for
from flask.typing import ResponseReturnValue
from marshmallow import ValidationError
from sqlalchemy.orm import Session

from blackwidow import crawlers
from blackwidow.api.context import caller, hub, transaction
from blackwidow.api.list_args import CrawlerListArgs
from blackwidow.api.paging import CURSOR_FIELD, next_url, paged
from blackwidow.core.domain_errors import DomainError, NotFound
from blackwidow.core.store import StoreUnavailable
from blackwidow.dashboard import chart, freshness
from blackwidow.dashboard.blueprint import blp, safe_next
from blackwidow.dashboard.forms import FormErrors, crawler_edits
from blackwidow.models import utcnow
from blackwidow.monitor.states import CRAWLER_STATES
from sources.model import Item, utc_text
from sources.registry import SOURCE_TYPES

SHOWN_CRAWLERS = 100  # a page of the list, as the API's default
CHART_MINUTES = 30
CHART_ITEMS = 1000  # the newest items the chart counts: the items API's largest page
SHOWN_ITEMS = 20


@blp.route("/crawlers", endpoint="crawlers")
def crawler_list() -> ResponseReturnValue:
    """A page of the crawlers, as `GET /api/v1/crawlers` pages them, with a link to the next."""
    asked = ("state", "source", CURSOR_FIELD)
    chosen = {name: request.args[name] for name in asked if request.args.get(name)}
    try:  # the list endpoint's own checks: a value it would refuse filters nothing here
        args = CrawlerListArgs().load(chosen | {"limit": SHOWN_CRAWLERS})
    except ValidationError as error:
        flash(f"{', '.join(sorted(error.messages))}: not a value to filter by", "error")
        args = {"limit": SHOWN_CRAWLERS}
    with transaction() as session:
        read = partial(crawlers.listing_with_nodes, session, caller())
        listed, cursor = paged("crawlers", args, read, lambda row: row[0].id)
        fresh = _freshness(session)
    return render_template(
        "dashboard/crawlers.html",
        listed=listed,
        fresh=fresh,
        next_page=None if cursor is None else next_url(cursor),
        filters={"state": args.get("state"), "source": args.get("source")},
        states=CRAWLER_STATES,
        sources=sorted(SOURCE_TYPES),
        back=request.full_path.rstrip("?"),
    )


@blp.route("/crawlers/<int:crawler_id>", endpoint="crawler")
def crawler_page(crawler_id: int) -> ResponseReturnValue:
    who = caller()
    with transaction() as session:
        crawler = crawlers.get(session, who, crawler_id)
        node_id = crawlers.node_of(session, crawler_id)
        sharing = crawlers.listing_with_nodes(session, who, source_key=crawler.uuid)
        node = crawlers.running_node(session, crawler_id)
        fresh = _freshness(session)
    feeds = crawlers.feed_health(hub().nodes, node, crawler_id)  # asks the node: no transaction
    items, store_error = _items(crawler_id)
    now = utcnow()
    counts = chart.per_minute((item.fetched_at for item in items), now, CHART_MINUTES)
    return render_template(
        "dashboard/crawler.html",
        crawler=crawler,
        fresh=fresh,
        node_id=node_id,
        sharing=[(c, n) for c, n in sharing if c.id != crawler_id],
        feeds=feeds["feeds"],
        items=newest_first(items)[:SHOWN_ITEMS],
        store_error=store_error,
        chart=chart.chart(counts, now),
        chart_items=CHART_ITEMS,
        back=request.path,
    )


def _freshness(session: Session) -> freshness.Freshness:
    """How old the crawlers' states are: each is as fresh as its shard's last cycle."""
    settings = hub().settings
    return freshness.read(session, settings.monitor_shards, settings.poll_interval, utcnow())


def newest_first(items: Iterable[Item]) -> list[Item]:
    """Newest fetch first, and within one fetch (every entry of a feed shares its fetch time)
    newest published first, then id: the store breaks a tie by id as text, which puts
    "story 10" between "story 2" and "story 1"."""

    def key(item: Item) -> tuple[str, str, str]:
        published = utc_text(item.published_at) if item.published_at else ""  # undated: last
        return utc_text(item.fetched_at), published, item.id

    return sorted(items, key=key, reverse=True)


def _items(crawler_id: int) -> tuple[list[Item], str | None]:
    """The newest items, as `GET .../items` reads them; the page still shows while the store
    is down."""
    try:
        return hub().store.items(crawler_id, CHART_ITEMS), None
    except StoreUnavailable as error:
        return [], str(error)


@blp.route("/crawlers/<int:crawler_id>/edit", methods=["POST"], endpoint="edit_crawler")
def edit_crawler(crawler_id: int) -> ResponseReturnValue:
    """Enable, disable or change the limit, as `PATCH /api/v1/crawlers/<id>` does: the same
    schema, the same update, one transaction. A refusal names the field and writes nothing."""
    back = safe_next(request.form.get("next")) or url_for("dashboard.crawlers")
    try:
        edits = crawler_edits(request.form)
        with transaction() as session:
            crawler = crawlers.edit(session, caller(), crawler_id, edits)
            done = f"Crawler {crawler.id} ({crawler.name}): {_described(edits)}."
    except NotFound:
        raise  # another user's crawler: missing, as on the API
    except (DomainError, FormErrors) as error:
        flash(f"Crawler {crawler_id} not changed: {error.message}", "error")
        return redirect(back, 303)
    flash(done, "done")
    return redirect(back, 303)


def _described(edits: dict[str, Any]) -> str:
    said = []
    if "enabled" in edits:
        said.append("enabled" if edits["enabled"] else "disabled")
    if "item_limit" in edits:
        limit = edits["item_limit"]
        said.append("no item limit" if limit is None else f"item limit {limit}")
    return ", ".join(said) or "nothing to change"


@blp.route("/crawlers/<int:crawler_id>/delete", methods=["GET", "POST"], endpoint="delete_crawler")
def delete_crawler(crawler_id: int) -> ResponseReturnValue:
    """GET asks to confirm and changes nothing; the confirmation posts back here and deletes
    as `DELETE /api/v1/crawlers/<id>` does: its subscriber leaves its node."""
    with transaction() as session:
        crawler = crawlers.get(session, caller(), crawler_id)
        if request.method == "GET":
            return render_template("dashboard/delete_crawler.html", crawler=crawler)
        done = f"Crawler {crawler.id} ({crawler.name}) deleted."
        crawlers.remove(session, crawler)
    flash(done, "done")
    return redirect(url_for("dashboard.crawlers"), 303)
