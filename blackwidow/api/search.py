"""REST: the items that hold every word of a query, across the caller's crawlers.

One search reads one store call per page (Store.search); the order is the store's own:
SQLite ranks by relevance, and a store that cannot search answers 501 (docs/stores.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from flask.views import MethodView
from flask_smorest import Blueprint
from marshmallow import ValidationError, fields, validate, validates

from blackwidow import crawlers
from blackwidow.api.context import caller, hub, transaction
from blackwidow.api.item_schemas import ItemsOut, PageArgs, WindowArgs
from blackwidow.api.paging import LINK_HEADER, store_page
from blackwidow.core.domain_errors import Invalid
from blackwidow.core.errors import ApiError, ErrorOut
from blackwidow.core.store import SearchUnsupported
from blackwidow.core.store.windows import Window, words

blp = Blueprint("search", __name__, url_prefix="/api/v1/items", description="Searching items")

MAX_QUERY = 500  # characters of a query


class SearchArgs(PageArgs, WindowArgs):
    q = fields.String(
        required=True,
        validate=validate.Length(max=MAX_QUERY),
        metadata={
            "description": "the words an item's title, text or author must all hold, in any "
            "case; punctuation separates words"
        },
    )
    crawler = fields.List(
        fields.Integer(),
        metadata={
            "description": "only this crawler's items; repeat for several (default: all "
            "the caller's crawlers)"
        },
    )

    @validates("q")
    def _has_words(self, value: str, **_: Any) -> None:
        if not words(value):
            raise ValidationError("needs a word to search for")


def searched_crawlers(asked: list[int] | None) -> list[int]:
    """The crawlers a search reads: the caller's (the admin's: all), or the asked ones, each of
    which must be one of those; another user's crawler reads as one that does not exist."""
    with transaction() as session:
        visible = [crawler.id for crawler in crawlers.listing(session, caller())]
    if asked is None:
        return visible
    unknown = sorted(set(asked) - set(visible))
    if unknown:
        raise Invalid(f"crawler: no crawler {unknown[0]}", "crawler")
    return sorted(set(asked))


def search_page(args: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    """A page of a search for this request's caller: the body `{"items", "next"}` and the Link
    header, as the API answers it; the dashboard shows the same page."""
    crawler_ids = searched_crawlers(args.get("crawler"))
    window = Window(args.get("since"), args.get("until"), args["by"])
    found = words(args["q"])
    filters = {
        "q": found,
        "crawler": args.get("crawler"),
        "since": window.since,
        "until": window.until,
        "by": window.by,
    }
    try:
        return store_page(
            "items/search",
            filters,
            args.get("cursor"),
            lambda after: hub().store.search(found, crawler_ids, args["limit"], window, after),
        )
    except SearchUnsupported as error:
        raise ApiError(501, "search_unsupported", f"search: {error}") from None


@blp.route("")
class Search(MethodView):
    @blp.arguments(SearchArgs(), location="query")
    @blp.response(200, ItemsOut, headers=LINK_HEADER)
    @blp.alt_response(501, schema=ErrorOut, description="the item store cannot search words")
    def get(self, args: dict[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
        """Search the items of the caller's crawlers for words.

        Every item whose title, text or author holds every word of `q`, of the caller's
        crawlers (or the `crawler`s named), in the window. On SQLite the most relevant come
        first (bm25, a word in the title counting double); a store that cannot search answers
        501 naming why. Pages as a crawler's items do: follow `next` or the Link header."""
        return search_page(args)
