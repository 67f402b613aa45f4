"""REST: a user's RSS feeds in and out as OPML, the feed readers' subscription lists."""

from __future__ import annotations

from typing import Any

from flask import Response, request
from flask.views import MethodView
from flask_smorest import Blueprint
from marshmallow import Schema, fields, validate

from blackwidow import feed_lists, opml
from blackwidow.api.context import caller, transaction
from blackwidow.api.crawlers import crawler_out
from blackwidow.api.schemas import MAX_BATCH, CrawlerBatchOut
from blackwidow.errors import ApiError, ErrorOut
from sources.rss.query import MAX_FEEDS

OPML_TYPE = "text/x-opml"
ACCEPTED_TYPES = (OPML_TYPE, "application/xml", "text/xml")
_DOCUMENT = {"type": "string"}  # OpenAPI: an OPML document
_IMPORT_RULES = (
    "An error names the outline (`body.outline[2].outline[5]`) and creates nothing. A feed "
    "listed twice, or one of your RSS crawlers fetches with the same keywords, is skipped "
    "(so importing a file again creates nothing) and listed in `skipped`. At most "
    f"{MAX_BATCH} new feeds per import; a group of more than {MAX_FEEDS} feeds (a crawler's "
    "most) is split in parts: `Tech`, `Tech (2)`."
)

blp = Blueprint("opml", __name__, url_prefix="/api/v1", description="OPML import and export")


class ImportArgs(Schema):
    group_by = fields.String(
        load_default="one-each",
        validate=validate.OneOf(feed_lists.GROUPINGS),
        metadata={"description": "a crawler per feed, per category path (outline), or one for all"},
    )
    keywords = fields.List(
        fields.String(),
        load_default=list,
        metadata={"description": "the keyword filter of every crawler made (repeat it)"},
    )


class SkippedFeed(Schema):
    url = fields.String()
    outline = fields.String(metadata={"description": "where the file lists it"})
    crawler_id = fields.Integer(
        allow_none=True,
        metadata={"description": "your crawler that fetches it already; null: listed before"},
    )


class ImportOut(CrawlerBatchOut):
    skipped = fields.List(
        fields.Nested(SkippedFeed),
        metadata={"description": "feeds not imported: crawled already, or listed twice"},
    )


@blp.route("/crawlers/import")
class CrawlerImport(MethodView):
    @blp.arguments(ImportArgs(), location="query")
    @blp.doc(
        description=_IMPORT_RULES,
        requestBody={
            "required": True,
            "description": "an OPML document (1 MiB at most), as feed readers export it",
            "content": {kind: {"schema": _DOCUMENT} for kind in ACCEPTED_TYPES},
        },
    )
    @blp.response(201, ImportOut)
    @blp.alt_response(413, schema=ErrorOut, description="the document is over 1 MiB")
    @blp.alt_response(415, schema=ErrorOut, description="the body is not sent as OPML or XML")
    def post(self, args: dict[str, Any]) -> dict[str, Any]:
        """Create RSS crawlers from an OPML file, all or none."""
        if request.mimetype not in ACCEPTED_TYPES:
            raise ApiError(
                415,
                "unsupported_media_type",
                f"Content-Type: send the OPML as one of {', '.join(ACCEPTED_TYPES)}",
                "Content-Type",
            )
        try:
            subscriptions = opml.read(request.get_data())
        except opml.OpmlError as error:
            raise ApiError(422, "invalid", str(error), error.where) from None
        with transaction() as session:
            imported = feed_lists.import_feeds(
                session, caller(), subscriptions, args["group_by"], args["keywords"], MAX_BATCH
            )
            return {
                "crawlers": [crawler_out(crawler, None) for crawler in imported.crawlers],
                "skipped": [
                    {"url": s.feed.url, "outline": s.feed.where, "crawler_id": s.crawler_id}
                    for s in imported.skipped
                ],
            }


@blp.route("/crawlers.opml")
class CrawlerOpml(MethodView):
    @blp.response(200, _DOCUMENT, content_type=OPML_TYPE)
    def get(self) -> Response:
        """The caller's RSS crawlers (the admin's: all) as OPML: a category per crawler
        holding its feeds. Imported back with `group_by=outline`, it makes the same crawlers
        (keywords are not part of OPML)."""
        with transaction() as session:
            document = feed_lists.document(session, caller())
        return Response(document, content_type=f"{OPML_TYPE}; charset=utf-8")
