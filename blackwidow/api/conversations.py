"""REST: the items of one conversation, across the caller's crawlers, oldest first."""

from __future__ import annotations

from typing import Any

from flask.views import MethodView
from flask_smorest import Blueprint

from blackwidow import crawlers
from blackwidow.api.context import caller, hub, transaction
from blackwidow.api.schemas import ItemsArgs, ItemsOut

blp = Blueprint(
    "conversations", __name__, url_prefix="/api/v1/conversations", description="Conversations"
)


@blp.route("/<path:conversation_id>", merge_slashes=False)  # ids may be URLs: keep their //
class Conversation(MethodView):
    @blp.arguments(ItemsArgs(), location="query")
    @blp.response(200, ItemsOut)
    def get(self, args: dict[str, Any], conversation_id: str) -> dict[str, Any]:
        """A conversation id may be a URL: send it percent-encoded or as the rest of the path."""
        with transaction() as session:
            crawler_ids = [c.id for c in crawlers.listing(session, caller())]
        items = hub().store.conversation(conversation_id, crawler_ids, args["limit"])
        return {"items": items}
