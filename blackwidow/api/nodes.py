"""REST: nodes: registration and leaving (cluster secret), listing and removal (admin) and the
count for autoscalers."""

from __future__ import annotations

from functools import partial
from typing import Any

from flask.views import MethodView
from flask_smorest import Blueprint

from blackwidow import cluster_identity, node_client, node_records
from blackwidow.api.context import caller, hub, transaction
from blackwidow.api.list_args import PageArgs
from blackwidow.api.paging import LINK_HEADER, next_link, paged
from blackwidow.api.schemas import (
    NodeCount,
    NodeLeave,
    NodeLeaving,
    NodeOut,
    NodeRegister,
    NodeRegistered,
)
from blackwidow.auth import require_admin
from blackwidow.core import node_networks
from blackwidow.core.domain_errors import Invalid
from blackwidow.models import Node

blp = Blueprint("nodes", __name__, url_prefix="/api/v1/nodes", description="Spawn nodes")


@blp.route("")
class Nodes(MethodView):
    @blp.arguments(PageArgs(), location="query")
    @blp.response(200, NodeOut(many=True), headers=LINK_HEADER)
    def get(self, args: dict[str, Any]) -> tuple[list[dict[str, Any]], dict[str, str]]:
        """Every node in id order, a page at a time."""
        with transaction() as session:
            require_admin(caller())
            read = partial(node_records.report, session, hub().settings.monitor_shards)
            nodes, cursor = paged("nodes", args, read, lambda node: node["id"])
            return nodes, next_link(cursor)

    @blp.arguments(NodeRegister())
    @blp.response(201, NodeRegistered)
    def post(self, data: dict[str, Any]) -> dict[str, Any]:
        """Register a node at its URL (the cluster secret): its id, generation and the
        cluster's id. The hub calls the URL back first, and refuses it (422, `url`) when it
        cannot reach a node there: registered, it would only be declared dead a few seconds
        later."""
        networks = hub().settings.node_networks
        node_networks.check_registration(data["url"], networks)
        why = node_client.unreachable_because(data["url"], networks)
        if why is not None:
            raise Invalid(
                f"the hub could not reach this node at {data['url']}/healthz ({why}):"
                " set the node's --advertise-url to a URL the hub can reach",
                "url",
            )
        with transaction() as session:
            node = node_records.register(session, data["url"], data["capacity"], hub().alerts)
            cluster = cluster_identity.cluster_id(session)
            return {
                "id": node.id,
                "url": node.url,
                "generation": node.generation,
                "cluster_id": cluster,
            }


@blp.route("/<int:node_id>")
class NodeView(MethodView):
    @blp.response(204)
    def delete(self, node_id: int) -> None:
        """Forget a dead node (the admin): it leaves the list; a live one is refused (409)."""
        with transaction() as session:
            require_admin(caller())
            node_records.remove(session, node_id)


@blp.route("/<int:node_id>/leave")
class NodeLeaveView(MethodView):
    @blp.arguments(NodeLeave())
    @blp.response(200, NodeLeaving)
    def post(self, data: dict[str, Any], node_id: int) -> Node:
        """A node stopping gracefully (the cluster secret): the hub moves its crawlers off at
        once, and it has left once it stops answering (docs/node-protocol.md "Leaving")."""
        with transaction() as session:
            return node_records.leave(session, node_id, data["generation"])


@blp.route("/count")
class NodeCountView(MethodView):
    @blp.response(200, NodeCount)
    def get(self) -> dict[str, int]:
        """Active nodes and how many the enabled crawlers call for, for autoscalers: never
        fewer than BLACKWIDOW_MIN_NODES."""
        settings = hub().settings
        with transaction() as session:
            weighted = settings.routing == "weighted"
            return node_records.count(
                session, weighted, settings.capacity_headroom, settings.min_nodes
            )
