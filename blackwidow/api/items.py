"""REST: a crawler's items, newest first: a page at a time, or all of them as one export."""

from __future__ import annotations

from typing import Any

from flask import Response
from flask.views import MethodView
from flask_smorest import Blueprint

from blackwidow import crawlers
from blackwidow.api import exports
from blackwidow.api.context import caller, hub, transaction
from blackwidow.api.item_schemas import ItemsArgs, ItemsOut, WindowArgs
from blackwidow.api.paging import LINK_HEADER, store_page
from blackwidow.core.store.windows import Window

blp = Blueprint("items", __name__, url_prefix="/api/v1/crawlers", description="A crawler's items")

_FILE = {"type": "string", "format": "binary"}  # OpenAPI: an export's body
_EXPORTED = (
    "every item in the window, newest first, streamed as one file (Content-Disposition:"
    " attachment); a stream the store cut short ends without its final chunk"
)


def _owned(crawler_id: int) -> None:
    """The caller's crawler (admin: any), else the 404 crawlers.get raises: checked before an
    export starts streaming."""
    with transaction() as session:
        crawlers.get(session, caller(), crawler_id)


def _window(args: dict[str, Any]) -> Window:
    return Window(args.get("since"), args.get("until"), args["by"])


def _export(name: str, crawler_id: int, args: dict[str, Any]) -> Response:
    _owned(crawler_id)
    return exports.response(name, crawler_id, hub().store.stream(crawler_id, _window(args)))


@blp.route("/<int:crawler_id>/items")
class CrawlerItems(MethodView):
    @blp.arguments(ItemsArgs(), location="query")
    @blp.response(200, ItemsOut, headers=LINK_HEADER)
    @blp.alt_response(200, schema=_FILE, content_type=exports.FORMATS["jsonl"].content_type)
    @blp.alt_response(200, schema=_FILE, content_type=exports.FORMATS["csv"].content_type)
    def get(self, args: dict[str, Any], crawler_id: int) -> Any:
        """Follow `next` (or the Link header) to the last page, whose `next` is null. A cursor
        holds for this caller, crawler and window only. `format=jsonl|csv` answers the whole
        export instead, as items.jsonl and items.csv do."""
        if args["format"] in exports.FORMATS:
            return _export(args["format"], crawler_id, args)
        _owned(crawler_id)
        window = _window(args)
        filters = {"since": window.since, "until": window.until, "by": window.by}
        return store_page(
            f"crawlers/{crawler_id}/items",
            filters,
            args.get("cursor"),
            lambda after: hub().store.page(crawler_id, args["limit"], window, after),
        )


@blp.route("/<int:crawler_id>/items.jsonl")
class CrawlerItemsJsonLines(MethodView):
    @blp.arguments(WindowArgs(), location="query")
    @blp.response(
        200, _FILE, content_type=exports.FORMATS["jsonl"].content_type, description=_EXPORTED
    )
    def get(self, args: dict[str, Any], crawler_id: int) -> Response:
        """Every item in the window, newest first, one JSON object a line (the fields of the
        items endpoint's items)."""
        return _export("jsonl", crawler_id, args)


@blp.route("/<int:crawler_id>/items.csv")
class CrawlerItemsCsv(MethodView):
    @blp.arguments(WindowArgs(), location="query")
    @blp.response(
        200, _FILE, content_type=exports.FORMATS["csv"].content_type, description=_EXPORTED
    )
    def get(self, args: dict[str, Any], crawler_id: int) -> Response:
        """Every item in the window, newest first, as CSV with a header row: the fields of the
        items endpoint's items in a fixed order; a null is an empty field."""
        return _export("csv", crawler_id, args)
