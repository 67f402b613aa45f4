"""REST: users' webhooks and the latest deliveries to them; the cluster webhook's deliveries
for the admin. Secrets are taken, never shown."""

from __future__ import annotations

from functools import partial
from typing import Any

from flask.views import MethodView
from flask_smorest import Blueprint

from blackwidow import accounts
from blackwidow.alerts import history, hooks
from blackwidow.api.context import caller, hub, transaction
from blackwidow.api.list_args import DeliveriesArgs
from blackwidow.api.paging import LINK_HEADER, next_link, paged
from blackwidow.api.schemas import DeliveryOut, WebhookCreate, WebhookOut
from blackwidow.auth import require_admin
from blackwidow.models import Webhook, WebhookDelivery

blp = Blueprint(
    "webhooks",
    __name__,
    url_prefix="/api/v1",
    description="Alert webhooks (a user's: admin token, or their own; the cluster's: admin)",
)


@blp.route("/users/<int:user_id>/webhooks")
class Webhooks(MethodView):
    @blp.response(200, WebhookOut(many=True))
    def get(self, user_id: int) -> list[Webhook]:
        """The user's webhooks; their secrets are never shown."""
        with transaction() as session:
            accounts.get_user(session, caller(), user_id)
            return hooks.listing(session, user_id)

    @blp.arguments(WebhookCreate())
    @blp.response(201, WebhookOut)
    def post(self, data: dict[str, Any], user_id: int) -> Webhook:
        """Events about the user's crawlers and budget are POSTed to it from now on."""
        with transaction() as session:
            accounts.get_user(session, caller(), user_id)
        hooks.check_target(data["url"], hub().settings.fetch_allow)  # resolves: no transaction
        with transaction() as session:
            accounts.get_user(session, caller(), user_id)
            return hooks.create(session, user_id, data["url"], data["secret"])


@blp.route("/users/<int:user_id>/webhooks/<int:webhook_id>")
class WebhookById(MethodView):
    @blp.response(204)
    def delete(self, user_id: int, webhook_id: int) -> None:
        """Remove a webhook with its deliveries."""
        with transaction() as session:
            accounts.get_user(session, caller(), user_id)
            hooks.delete(session, user_id, webhook_id)


@blp.route("/users/<int:user_id>/webhooks/deliveries")
class UserDeliveries(MethodView):
    @blp.arguments(DeliveriesArgs(), location="query")
    @blp.response(200, DeliveryOut(many=True), headers=LINK_HEADER)
    def get(
        self, args: dict[str, Any], user_id: int
    ) -> tuple[list[WebhookDelivery], dict[str, str]]:
        """The latest deliveries to the user's webhooks, newest first."""
        with transaction() as session:
            accounts.get_user(session, caller(), user_id)
            read = partial(history.recent, session, user_id)
            rows, cursor = paged(f"user {user_id} deliveries", args, read, lambda row: row.id)
        return rows, next_link(cursor)


@blp.route("/webhooks/deliveries")
class ClusterDeliveries(MethodView):
    @blp.arguments(DeliveriesArgs(), location="query")
    @blp.response(200, DeliveryOut(many=True), headers=LINK_HEADER)
    def get(self, args: dict[str, Any]) -> tuple[list[WebhookDelivery], dict[str, str]]:
        """The latest deliveries to the cluster's webhook (BLACKWIDOW_WEBHOOK_URL)."""
        with transaction() as session:
            require_admin(caller())
            read = partial(history.recent, session, None)
            rows, cursor = paged("cluster deliveries", args, read, lambda row: row.id)
        return rows, next_link(cursor)
