"""Exports: every item of a crawler as one streamed file, JSON lines or CSV, a batch at a time.

Both carry the items endpoint's fields, rendered by its item schema. The response is chunked
(HTTP/1.1) and holds one batch in memory whatever the item count. The first batch is read
before the answer starts, so a store that is down is a 503 in the error shape. If the store
fails later, the hub logs it and drops the connection without the terminating chunk: the
client sees a transfer error (requests: ChunkedEncodingError; curl: exit 18), never a file
that looks complete. Every whole JSON line and CSV record ends in a line break, so a partial
last one is recognisable too.
"""

from __future__ import annotations

import csv
import io
import itertools
import json
import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from flask import Response

from blackwidow.api.item_schemas import ItemOut
from sources.model import Item

log = logging.getLogger(__name__)

ROWS_PER_CHUNK = 500  # items rendered and written at a time
COLUMNS = tuple(ItemOut().fields)  # CSV columns: the item schema's fields, in its order
_ROWS = ItemOut(many=True)

Rows = Iterator[list[dict[str, Any]]]


def _jsonl(batches: Rows) -> Iterator[str]:
    """One JSON object a line; ASCII-escaped, so no line break but the last is in a line
    (U+2028 would split lines for some readers)."""
    for rows in batches:
        yield "".join(json.dumps(row) + "\n" for row in rows)


def _csv(batches: Rows) -> Iterator[str]:
    """RFC 4180 as the csv module writes it: a header row, CRLF records, fields holding
    commas, quotes or line breaks quoted. A null is an empty field."""
    out = io.StringIO()
    writer = csv.DictWriter(out, COLUMNS)
    writer.writeheader()
    for rows in itertools.chain([[]], batches):
        writer.writerows(rows)
        yield out.getvalue()
        out.seek(0)
        out.truncate()


@dataclass(frozen=True)
class Format:
    content_type: str
    render: Callable[[Rows], Iterator[str]]


FORMATS = {
    "jsonl": Format("application/x-ndjson", _jsonl),
    "csv": Format("text/csv; charset=utf-8", _csv),
}


def response(name: str, crawler_id: int, items: Iterator[Item]) -> Response:
    """The export `name` (a key of FORMATS) of these items, streamed as they are read."""
    batches = _rendered(items)
    first = next(batches, [])  # a store that is down fails here, before any byte is sent
    chosen = FORMATS[name]
    return Response(
        chosen.render(_watched(crawler_id, itertools.chain([first], batches))),
        content_type=chosen.content_type,
        headers={"Content-Disposition": f"attachment; filename=crawler-{crawler_id}.{name}"},
    )


def _rendered(items: Iterator[Item]) -> Rows:
    while batch := list(itertools.islice(items, ROWS_PER_CHUNK)):
        yield _ROWS.dump(batch)


def _watched(crawler_id: int, batches: Rows) -> Rows:
    """The batches, and a log line naming the crawler when the store fails part way."""
    try:
        yield from batches
    except Exception as error:
        log.warning("export cut short crawler=%s error=%s", crawler_id, error)
        raise
