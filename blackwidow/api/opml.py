"""REST: a user's RSS feeds in and out as OPML, the feed readers' subscription lists."""

from __future__ import annotations

from typing import Any

from flask import Response, request
from flask.views import MethodView
from flask_smorest import Blueprint
from marshmallow import Schema, fields, validate

from blackwidow import crawler_outlines, crawlers, feed_lists, opml
from blackwidow.api.context import caller, hub, transaction
from blackwidow.api.crawlers import crawler_out
from blackwidow.api.schemas import MAX_BATCH, CrawlerBatchOut, CrawlerCreate
from blackwidow.core.domain_errors import Invalid
from blackwidow.core.errors import ApiError, ErrorOut
from sources.rss.query import MAX_FEEDS

OPML_TYPE = "text/x-opml"
ACCEPTED_TYPES = (OPML_TYPE, "application/xml", "text/xml")
_DOCUMENT = {"type": "string"}  # OpenAPI: an OPML document
_IMPORT_RULES = (
    "An error names the outline (`body.outline[2].outline[5]`) and creates nothing. A feed "
    "listed twice, or one of your RSS crawlers fetches with the same keywords, is skipped "
    "(so importing a file again creates nothing) and listed in `skipped`. At most "
    f"{MAX_BATCH} new feeds per import; a group of more than {MAX_FEEDS} feeds (a crawler's "
    "most) is split in parts: `Tech`, `Tech (2)`. An outline with attributes in the "
    f"`{opml.NAMESPACE}` namespace, as `GET /crawlers.opml` writes it, is one crawler with "
    "its own keywords and settings, whatever `group_by` says: made when you have no crawler "
    "of its name, else listed in `skipped_crawlers` (`differs` empty: the same crawler)."
)
_CREATE = CrawlerCreate()

TITLES_WITHIN = 5.0  # seconds an export spends asking nodes for feed titles

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


class SkippedCrawler(Schema):
    name = fields.String()
    outline = fields.String(metadata={"description": "where the file defines it"})
    crawler_id = fields.Integer(metadata={"description": "your crawler of that name"})
    differs = fields.List(
        fields.String(),
        metadata={
            "description": "the fields your crawler has otherwise (it is left as it is); "
            "empty: the same crawler"
        },
    )


class ImportOut(CrawlerBatchOut):
    skipped = fields.List(
        fields.Nested(SkippedFeed),
        metadata={"description": "feeds not imported: crawled already, or listed twice"},
    )
    skipped_crawlers = fields.List(
        fields.Nested(SkippedCrawler),
        metadata={"description": "crawler outlines not imported: you have a crawler of the name"},
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
            raise Invalid(str(error), error.where) from None
        for outline in subscriptions.crawlers:
            _check(outline)
        with transaction() as session:
            imported = feed_lists.import_feeds(
                session, caller(), subscriptions, args["group_by"], args["keywords"], MAX_BATCH
            )
            return _imported_out(imported)


def _check(outline: opml.CrawlerOutline) -> None:
    """A crawler outline's settings through the checks of POST /crawlers, named as the file
    names them (`body.outline[0].blackwidow:itemLimit`)."""
    errors = _CREATE.validate(crawler_outlines.entry(outline))
    if errors:
        raise crawler_outlines.in_file_terms(Invalid.from_messages(errors), outline)


def _imported_out(imported: feed_lists.Imported) -> dict[str, Any]:
    return {
        "crawlers": [crawler_out(crawler, None) for crawler in imported.crawlers],
        "skipped": [
            {"url": s.feed.url, "outline": s.feed.where, "crawler_id": s.crawler_id}
            for s in imported.skipped
        ],
        "skipped_crawlers": [
            {
                "name": e.outline.name,
                "outline": e.outline.where,
                "crawler_id": e.crawler_id,
                "differs": e.differs,
            }
            for e in imported.existing
        ],
    }


@blp.route("/crawlers.opml")
class CrawlerOpml(MethodView):
    @blp.response(200, _DOCUMENT, content_type=OPML_TYPE)
    def get(self) -> Response:
        """The caller's RSS crawlers (the admin's: all) as OPML 2.0: an outline per crawler
        holding its feeds, with its keywords, limits, schedule and the rest as attributes in
        the `urn:blackwidow:opml:1` namespace (other readers see categories of feeds).
        Imported back it makes the same crawlers, and nothing where they are."""
        with transaction() as session:
            listed = crawlers.listing(session, caller(), source="rss")
            # crawlers of one source key share its feeds: one of them is asked for their titles
            one_each = {crawler.uuid: crawler.id for crawler in listed}.values()
            running = crawlers.running_nodes(session, list(one_each))
        titles = crawlers.feed_titles(hub().nodes, running, TITLES_WITHIN)  # no transaction
        document = feed_lists.document(listed, titles)
        return Response(document, content_type=f"{OPML_TYPE}; charset=utf-8")
