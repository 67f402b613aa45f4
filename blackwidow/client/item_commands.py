"""`blackwidow items`: a crawler's items read, or tailed as they arrive (`--follow`); the
whole of them to a file is `blackwidow export` (blackwidow.client.export_command)."""

from __future__ import annotations

import contextlib
import itertools
import signal
import time
from collections.abc import Iterator
from typing import Any

import click

from blackwidow.client import output
from blackwidow.client.arrivals import OVERLAP, PAGE, Arrivals, order
from blackwidow.client.hub_client import HubClient
from blackwidow.client.options import CRAWLER, connected, window, window_params

COLUMNS = ("fetched_at", "published_at", "title", "url", "author")


@click.command()
@click.argument("crawler_id", type=CRAWLER, metavar="CRAWLER")
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
    # Ctrl-C is how a tail ends, status 0, however it was started: a shell script's
    # background job hands its children SIGINT ignored, as the servers and the demo know too
    signal.signal(signal.SIGINT, signal.default_int_handler)
    with contextlib.suppress(KeyboardInterrupt):
        output.tail(_arriving(hub, crawler_id, newest[::-1], since, interval), COLUMNS, fmt)


def _arriving(
    hub: HubClient, crawler_id: int, first: list[dict[str, Any]], since: str | None, interval: float
) -> Iterator[dict[str, Any]]:
    """`first`, then forever the items stored since, oldest first (Arrivals). Known from the
    start are `first` and, of the minute before its newest, the items older than all of
    `first` (the ones `--limit` left out), so what is printed after `first` is what came after
    it."""
    arrivals = Arrivals(hub, crawler_id, since)
    arrivals.know(first)
    if first:
        oldest = min(order(item) for item in first)
        start = (max(arrivals.known.values()) - OVERLAP).isoformat()
        window = arrivals.window({"limit": PAGE, "since": start})
        arrivals.know(item for item in window if order(item) < oldest)
    yield from first
    while True:
        time.sleep(interval)
        yield from arrivals.read()
