"""REST: the items of one conversation, across the caller's crawlers, oldest first."""

from __future__ import annotations

from typing import Any

from flask.views import MethodView
from flask_smorest import Blueprint

from blackwidow import crawlers
from blackwidow.api.context import caller, hub, transaction
from blackwidow.api.item_schemas import ItemsOut, PageArgs
from blackwidow.api.paging import LINK_HEADER, store_page

blp = Blueprint(
    "conversations", __name__, url_prefix="/api/v1/conversations", description="Conversations"
)


@blp.route("/<path:conversation_id>", merge_slashes=False)  # ids may be URLs: keep their //
class Conversation(MethodView):
    @blp.arguments(PageArgs(), location="query")
    @blp.response(200, ItemsOut, headers=LINK_HEADER)
    def get(self, args: dict[str, Any], conversation_id: str) -> tuple[dict, dict]:
        """A conversation id may be a URL: send it percent-encoded or as the rest of the path.
        Pages as a crawler's items do: follow `next` or the Link header."""
        with transaction() as session:
            crawler_ids = [c.id for c in crawlers.listing(session, caller())]
        return store_page(
            f"conversations/{conversation_id}",
            {},
            args.get("cursor"),
            lambda after: hub().store.conversation_page(
                conversation_id, crawler_ids, args["limit"], after
            ),
        )
