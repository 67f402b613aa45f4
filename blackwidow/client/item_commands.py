"""`blackwidow items`: a crawler's items read, or tailed as they arrive (`--follow`); the
whole of them to a file is `blackwidow export` (blackwidow.client.export_command)."""

from __future__ import annotations

import contextlib
import itertools
import time
from collections.abc import Iterable, Iterator
from datetime import datetime, timedelta
from typing import Any

import click

from blackwidow.client import output
from blackwidow.client.hub_client import HubClient
from blackwidow.client.options import connected, window, window_params

COLUMNS = ("fetched_at", "published_at", "title", "url", "author")
PAGE = 1000  # the largest page the hub gives
# --follow asks again for the last minute before the newest item printed: an item a node
# stored late (its store was down a moment) still shows, and the ids printed in that minute
# keep it from showing twice
FOLLOW_OVERLAP = timedelta(minutes=1)


@click.command()
@click.argument("crawler_id", type=int)
@click.option(
    "--limit",
    type=click.IntRange(min=1),
    default=20,
    show_default=True,
    help="How many of the newest items (with --follow: to start from).",
)
@window
@output.format_option(choices=("table", "jsonl", "csv"))
@click.option("--follow", "-f", is_flag=True, help="Then print new items as they arrive.")
@click.option(
    "--interval",
    type=click.FloatRange(min=0.1),
    default=2.0,
    show_default=True,
    help="Seconds between asks for new items (--follow).",
)
@connected
def items(
    hub: HubClient,
    crawler_id: int,
    limit: int,
    since: str | None,
    until: str | None,
    by: str,
    fmt: str,
    follow: bool,
    interval: float,
) -> None:
    """A crawler's newest items (`--limit`), newest first; with `--follow`, oldest first
    and then each new item as it is stored, like `tail -f` (Ctrl-C stops)."""
    if follow and (until is not None or by != "fetched_at"):
        raise click.UsageError("--follow: new items come by fetched_at, so no --until or --by")
    path = f"/api/v1/crawlers/{crawler_id}/items"
    params = {**window_params(since, until, by), "limit": min(limit, PAGE)}
    newest = list(itertools.islice(hub.every(path, params, key="items"), limit))
    if not follow:
        output.rows(newest, COLUMNS, fmt)
        return
    with contextlib.suppress(KeyboardInterrupt):  # Ctrl-C is how a tail ends: status 0
        output.tail(_arriving(hub, path, newest[::-1], since, interval), COLUMNS, fmt)


def _arriving(
    hub: HubClient, path: str, first: list[dict[str, Any]], since: str | None, interval: float
) -> Iterator[dict[str, Any]]:
    """`first`, then forever the items stored since, oldest first: each poll reads from a
    minute before the newest item known, and leaves out the ids known in that minute. Known
    from the start are `first` and, of that minute, the items older than all of `first` (the
    ones `--limit` left out), so what is printed after `first` is what came after it."""
    known = _fetched(first)
    if first:
        since = (max(known.values()) - FOLLOW_OVERLAP).isoformat()
        oldest = min(_order(item) for item in first)
        window = hub.every(path, {"limit": PAGE, "since": since}, key="items")
        known |= _fetched(item for item in window if _order(item) < oldest)
    batch = first
    while True:
        yield from batch
        known |= _fetched(batch)
        time.sleep(interval)
        if known:
            start = max(known.values()) - FOLLOW_OVERLAP
            known = {item_id: at for item_id, at in known.items() if at >= start}
            since = start.isoformat()
        params = {"limit": PAGE, **({"since": since} if since else {})}
        fresh = [item for item in hub.every(path, params, key="items") if item["id"] not in known]
        batch = sorted(fresh, key=_order)


def _order(item: dict[str, Any]) -> tuple[datetime, str]:
    """The hub's order of items (newest last here): fetch time, then id."""
    return datetime.fromisoformat(item["fetched_at"]), item["id"]


def _fetched(items: Iterable[dict[str, Any]]) -> dict[str, datetime]:
    return {item["id"]: datetime.fromisoformat(item["fetched_at"]) for item in items}
