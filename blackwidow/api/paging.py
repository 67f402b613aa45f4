"""Keyset pages for every list: a bounded page, and a signed cursor to the next one.

A cursor is where the last page ended (the sort key of its last row, or Cassandra's paging
state), signed with a key derived from the cluster secret and salted with the list, the
caller and the list's filters. A client cannot craft or alter one, nor carry it to another
user's list or to other filters: it reads as a 400 naming `cursor`. Every hub process and
gunicorn worker derives the same key, so any of them continues any page.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar
from urllib.parse import urlencode

from flask import request
from itsdangerous import BadSignature, URLSafeSerializer

from blackwidow.api.context import caller, hub
from blackwidow.auth import Caller
from blackwidow.core.errors import ApiError
from blackwidow.core.settings import Settings
from blackwidow.core.store.windows import BadPosition, ItemPage

CURSOR_FIELD = "cursor"
PAGE_FIELDS = ("limit", CURSOR_FIELD)  # a list's own arguments; the others are its filters
_KEY_LABEL = b"blackwidow list cursors"
_PROCESS_KEY = os.urandom(32)  # no secret configured: cursors hold within this process only
# what a list's OpenAPI description says of its next-page header
LINK_HEADER = {
    "Link": {
        "description": 'the next page, when there is more: `<URL>; rel="next"`, this request '
        "with a `cursor`; absent on the last page",
        "schema": {"type": "string"},
    }
}

Row = TypeVar("Row")


def cursor_key(settings: Settings) -> bytes:
    """The signing key: derived from the cluster secret (or the admin token) like the
    dashboard's session key, under its own label so one never verifies the other."""
    base = settings.cluster_secret or settings.admin_token
    if not base:
        return _PROCESS_KEY
    return hmac.new(base.encode(), _KEY_LABEL, hashlib.sha256).digest()


class Cursors:
    """Signs and reads the cursors of one list for one caller under one set of filters."""

    def __init__(
        self, key: bytes, listing: str, caller: Caller, filters: Mapping[str, Any]
    ) -> None:
        who = "admin" if caller.is_admin else f"user {caller.user_id}"
        scope = json.dumps([listing, who, dict(filters)], sort_keys=True, default=str)
        self._serializer = URLSafeSerializer(key, salt=scope)

    def dump(self, position: Any) -> str:
        """An opaque cursor for `position` (any JSON value: a sort key, a paging state)."""
        return self._serializer.dumps(position)

    def load(self, cursor: str | None) -> Any:
        """The position a cursor holds, or None for the first page."""
        if cursor is None:
            return None
        try:
            return self._serializer.loads(cursor)
        except BadSignature:
            raise bad_cursor() from None

    def page(
        self, rows: Sequence[Row], limit: int, position: Callable[[Row], Any]
    ) -> tuple[list[Row], str | None]:
        """The page out of `limit + 1` rows read, and the cursor to the next page: reading one
        row beyond tells whether there is more without counting. None on the last page."""
        if len(rows) <= limit:
            return list(rows), None
        kept = list(rows[:limit])
        return kept, self.dump(position(kept[-1]))


def bad_cursor() -> ApiError:
    """The 400 for a cursor that is not this list's: also for a signed one whose position the
    store no longer reads (the store changed under the hub)."""
    return ApiError(
        400, "invalid", "cursor: not a cursor this list gave for these filters", CURSOR_FIELD
    )


def next_url(cursor: str | None) -> str | None:
    """The URL of the page after this one (None on the last): this request's URL and query,
    with the new cursor in place of the old."""
    if cursor is None:
        return None
    query = [
        (name, value) for name, value in request.args.items(multi=True) if name != CURSOR_FIELD
    ]
    query.append((CURSOR_FIELD, cursor))
    return f"{request.base_url}?{urlencode(query)}"


def next_link(cursor: str | None) -> dict[str, str]:
    """The `Link: <...>; rel="next"` header for the page after this one (none on the last)."""
    url = next_url(cursor)
    return {} if url is None else {"Link": f'<{url}>; rel="next"'}


def paged(
    listing: str,
    args: Mapping[str, Any],
    read: Callable[..., Sequence[Row]],
    position: Callable[[Row], Any],
) -> tuple[list[Row], str | None]:
    """One page of a keyset list, for the caller of this request, and the cursor to the next
    page (None on the last): for `next_link`, or `next_url` on a dashboard page.

    `args` are the list's query arguments (`limit`, `cursor`, and filters, which scope the
    cursor); `read(after=..., limit=..., **filters)` gives the rows past the position a
    cursor holds (None: from the start), in the list's order, at most `limit`; `position`
    is a row's sort key, what the next cursor holds.
    """
    filters = {name: value for name, value in args.items() if name not in PAGE_FIELDS}
    cursors = _callers_cursors(listing, filters)
    after = cursors.load(args.get(CURSOR_FIELD))
    rows = read(after=after, limit=args["limit"] + 1, **filters)
    return cursors.page(rows, args["limit"], position)


def store_page(
    listing: str, filters: Mapping[str, Any], cursor: str | None, read: Callable[[Any], ItemPage]
) -> tuple[dict[str, Any], dict[str, str]]:
    """A page the store reads from a position (items, a conversation), as the answer's body,
    `{"items": [...], "next": url | null}`, and its Link header. The position travels signed
    in the cursor; one the store does not read is a bad cursor too."""
    cursors = _callers_cursors(listing, filters)
    try:
        page = read(cursors.load(cursor))
    except BadPosition:
        raise bad_cursor() from None
    following = None if page.next is None else cursors.dump(page.next)
    return {"items": page.items, "next": next_url(following)}, next_link(following)


def _callers_cursors(listing: str, filters: Mapping[str, Any]) -> Cursors:
    return Cursors(cursor_key(hub().settings), listing, caller(), filters)
