"""`blackwidow login|logout`, and the accounts around crawlers: users (admin), nodes (admin),
a user's credentials for paid sources."""

from __future__ import annotations

import json
import sys
from typing import Any

import click

from blackwidow.client import config, output
from blackwidow.client.config import HUB_ENV, HubConnection
from blackwidow.client.hub_client import HubClient
from blackwidow.client.options import connected

USER_COLUMNS = ("id", "name", "item_limit")
NODE_COLUMNS = ("id", "url", "state", "subscribers", "data_sources", "last_polled_at", "phi")
# the table fits 80 columns: id and state whole, the URL gives way, the last poll as its age
NODE_TABLE = (
    output.Column("id"),
    output.Column("url", squeezed=True),
    output.Column("state"),
    output.Column("subscribers"),
    output.Column("data_sources", "sources"),
    output.Column("last_polled_at", "last poll", shown=output.age),
    output.Column("phi", shown="{:.2f}".format),
)
CREDENTIAL_COLUMNS = ("source", "name", "fields", "updated_at")


def _secret(prompt: str, from_stdin: bool = False) -> str:
    """A secret from a hidden prompt on a terminal, else (or when asked) the first line of
    standard input: never from the command line, where process listings show it."""
    if sys.stdin.isatty() and not from_stdin:
        return click.prompt(prompt, hide_input=True)
    return sys.stdin.readline().strip()


@click.command()
@click.option("--hub", "hub_url", envvar=HUB_ENV, help=f"Hub URL [env {HUB_ENV}].")
@click.option(
    "--token-stdin",
    is_flag=True,
    help="Read the token from standard input even on a terminal (piped, it always is).",
)
def login(hub_url: str | None, token_stdin: bool) -> None:
    """Save the hub's URL and your token (asked for, or read from standard input) to your
    config directory, readable by you only; the other commands use them."""
    hub_url = hub_url or config.saved().get("hub_url")
    if not hub_url:
        raise click.UsageError(f"--hub: no hub URL (set {HUB_ENV})")
    token = _secret("token", from_stdin=token_stdin)
    if not token:
        raise click.UsageError("token: none given")
    connection = HubConnection(hub_url.rstrip("/"), token)
    hub = HubClient(connection)
    hub.call("GET", "/api/v1/crawlers", params={"limit": 1})  # a token the hub refuses: exit 1
    path = config.save(connection)
    click.echo(f"logged in to {connection.hub_url} as {_who(hub)}; saved to {path}")


def _who(hub: HubClient) -> str:
    """The user a token is, or the admin (whose token is no user's)."""
    response = hub.call("GET", "/api/v1/users/me", allow=(404,))
    if response.status_code == 404:
        return "the admin"
    me = response.json()
    return f"user {me['id']} ({me['name']})"


@click.command()
def logout() -> None:
    """Forget the saved hub URL and token."""
    click.echo("logged out" if config.forget() else "not logged in")


@click.group()
def users() -> None:
    """Users and their budgets (listing and adding: the admin)."""


@users.command("add")
@click.argument("name")
@click.option("--item-limit", type=click.IntRange(min=1), help="The user's item budget.")
@output.format_option(default_piped="json")
@connected
def add_user(hub: HubClient, name: str, item_limit: int | None, fmt: str) -> None:
    """Create a user; their token is shown this once."""
    body: dict[str, Any] = {"name": name}
    if item_limit is not None:
        body["item_limit"] = item_limit
    output.record(hub.json("POST", "/api/v1/users", json=body), fmt)


@users.command("ls")
@output.format_option()
@connected
def list_users(hub: HubClient, fmt: str) -> None:
    """Every user."""
    output.rows(hub.every("/api/v1/users"), USER_COLUMNS, fmt)


def _user_path(user_id: int | None) -> str:
    return f"/api/v1/users/{'me' if user_id is None else user_id}"


def _user_id(hub: HubClient, user_id: int | None) -> int:
    """The id given, or the caller's own (the hub says whose token this is)."""
    return user_id if user_id is not None else hub.json("GET", _user_path(None))["id"]


@users.command("show")
@click.argument("user_id", type=int, required=False)
@output.format_option(default_piped="json")
@connected
def show_user(hub: HubClient, user_id: int | None, fmt: str) -> None:
    """A user (yourself, without an id)."""
    output.record(hub.json("GET", _user_path(user_id)), fmt)


@users.command("usage")
@click.argument("user_id", type=int, required=False)
@output.format_option(default_piped="json")
@connected
def usage(hub: HubClient, user_id: int | None, fmt: str) -> None:
    """Items stored and delivered against a user's budget (yours, without an id)."""
    output.record(hub.json("GET", f"/api/v1/users/{_user_id(hub, user_id)}/usage"), fmt)


@click.group()
def nodes() -> None:
    """Spawn nodes (the admin)."""


@nodes.command("ls")
@output.format_option()
@connected
def list_nodes(hub: HubClient, fmt: str) -> None:
    """Every node, with its state and load."""
    output.rows(hub.every("/api/v1/nodes", {"limit": 1000}), NODE_COLUMNS, fmt, NODE_TABLE)


@nodes.command("rm")
@click.argument("node_id", type=int, metavar="ID")
@connected
def remove_node(hub: HubClient, node_id: int) -> None:
    """Forget a dead node (a live one is refused: stopped, it leaves by itself)."""
    hub.call("DELETE", f"/api/v1/nodes/{node_id}")
    click.echo(f"node {node_id} removed")


@click.group()
def credentials() -> None:
    """Your credentials for sources that need them (X, paid streams); values are never shown."""


def _credentials_path(hub: HubClient, user_id: int | None) -> str:
    return f"/api/v1/users/{_user_id(hub, user_id)}/credentials"


_USER_OPTION = click.option(
    "--user", "user_id", type=int, help="Whose (the admin); default: yours."
)


@credentials.command("ls")
@_USER_OPTION
@output.format_option()
@connected
def list_credentials(hub: HubClient, user_id: int | None, fmt: str) -> None:
    """Your credentials: source, name and which fields are stored."""
    output.rows(hub.json("GET", _credentials_path(hub, user_id)), CREDENTIAL_COLUMNS, fmt)


@credentials.command("set")
@click.argument("source")
@click.argument("name", default="default")
@click.option("--field", "names", multiple=True, help="A field to ask for (hidden); repeat.")
@_USER_OPTION
@connected
def set_credential(
    hub: HubClient, source: str, name: str, names: tuple[str, ...], user_id: int | None
) -> None:
    """Store a credential: each `--field` asked for without echo, or, without `--field`, a
    JSON object of fields read from standard input. Never from the command line."""
    if names:
        fields = {field: click.prompt(field, hide_input=True) for field in names}
    else:
        try:
            fields = json.loads(sys.stdin.read())
        except ValueError as error:
            raise click.UsageError(
                f"--field: none given, and stdin is not JSON ({error})"
            ) from None
    hub.call("PUT", f"{_credentials_path(hub, user_id)}/{source}/{name}", json=fields)
    click.echo(f"credential {source}/{name} stored")


@credentials.command("rm")
@click.argument("source")
@click.argument("name", default="default")
@_USER_OPTION
@connected
def remove_credential(hub: HubClient, source: str, name: str, user_id: int | None) -> None:
    """Delete a credential."""
    hub.call("DELETE", f"{_credentials_path(hub, user_id)}/{source}/{name}")
    click.echo(f"credential {source}/{name} deleted")
