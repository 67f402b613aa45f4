"""The `blackwidow` command: hub, spawn, demo and db upgrade, and the analysts' commands
(blackwidow.client). Input errors exit with status 2."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import click

from blackwidow.client import commands as analyst_commands

if TYPE_CHECKING:
    from blackwidow.core.settings import Settings

# The servers' modules (SQL, Flask, the store drivers) are imported by the commands that run
# them: an analyst's `blackwidow items` starts in a fraction of the time.


def _settings(*, serves: bool = True, **overrides: object) -> Settings:
    """The settings as every entry point that serves checks them (blackwidow.core.startup), with
    logging set up in their format at --log-level; `overrides` are the command's options,
    checked as the variables they stand for are."""
    from blackwidow.core import startup

    log_level = click.get_current_context().find_root().params["log_level"]
    return startup.settings_or_exit(serves=serves, log_level=log_level.upper(), overrides=overrides)


@click.group()
@click.version_option(
    package_name="blackwidow", prog_name="blackwidow", message="%(prog)s %(version)s"
)
@click.option("--log-level", default="INFO", show_default=True, help="Logging level (stderr).")
def main(log_level: str) -> None:
    """Black Widow: distributed crawling with a hub and spawn nodes."""
    from blackwidow.core import logs

    # text until a server's command has read BLACKWIDOW_LOG_FORMAT with its settings
    logs.configure("text", log_level.upper())


@main.command()
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=8000, show_default=True, type=click.IntRange(0, 65535))
@click.option("--db", "database_url", help="SQLAlchemy URL (default BLACKWIDOW_DATABASE_URL).")
def hub(host: str, port: int, database_url: str | None) -> None:
    """Run the hub: REST API and the monitor loop."""
    settings = _settings(database_url=database_url)  # first: the imports below log
    from blackwidow import db
    from blackwidow.alerts.delivery import delivery_thread
    from blackwidow.app import create_app
    from blackwidow.core import serving, startup
    from blackwidow.core.store import open_store
    from blackwidow.monitor.loop import MonitorLoop

    with startup.store_refusal():  # before the database is touched: nothing half-done
        store = open_store(settings.store_url)
    engine = db.make_engine(settings.database_url)
    if engine.dialect.name == "sqlite" and db.needs_schema(engine):
        db.upgrade(settings.database_url)
    app = create_app(settings, store)
    hub = app.extensions["blackwidow"]
    monitor = MonitorLoop(hub.sessions, settings, hub.alerts)
    deliveries = delivery_thread(hub.sessions, settings, hub.alerts)
    server, url = serving.bind(app, host, port)
    monitor.start()
    deliveries.start()

    def stop() -> None:
        monitor.stop()
        deliveries.stop()

    serving.run(server, url, on_stop=stop)


@main.command()
@click.option("--db", "database_url", help="SQLAlchemy URL (default BLACKWIDOW_DATABASE_URL).")
def monitor(database_url: str | None) -> None:
    """Run the monitor loop alone, beside hub processes that serve without it (the
    Procfile's web): polling a thousand nodes never takes the API's interpreter."""
    settings = _settings(database_url=database_url)
    from blackwidow import db
    from blackwidow.alerts.outbox import AlertOutbox
    from blackwidow.monitor.loop import run_alone

    engine = db.make_engine(
        settings.database_url, settings.database_busy_timeout, settings.database_timeout
    )
    alerts = AlertOutbox(cluster_hook=settings.webhook_url is not None)
    run_alone(db.make_sessions(engine), settings, alerts)


@main.command()
@click.option("--hub", "hub_url", required=True, help="The hub's base URL.")
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=0, show_default=True, type=click.IntRange(0, 65535))
@click.option("--advertise-url", help="URL the hub should use for this node (default: bound URL).")
def spawn(hub_url: str, host: str, port: int, advertise_url: str | None) -> None:
    """Run a spawn node that registers with the hub."""
    settings = _settings()
    from blackwidow.core import startup
    from spawn.runtime import run_node

    with startup.store_refusal():
        run_node(settings, hub_url, host, port, advertise_url)


@main.command()
@click.option("--duration", type=click.FloatRange(min=1), help="Stop after this many seconds.")
@click.option(
    "--kill-node-after",
    type=click.FloatRange(min=0),
    default=40.0,
    show_default=True,
    help="Kill one node (kill -9) after this many seconds; Enter on a terminal kills it sooner.",
)
def demo(duration: float | None, kill_node_after: float) -> None:
    """Hub, two nodes and a local feed server, offline; the dashboard's sign-in link; shows
    items arriving, then kills a node so its crawlers move."""
    from blackwidow.demo.run import run_demo

    sys.exit(run_demo(duration, kill_node_after))


for command in analyst_commands.ALL:
    main.add_command(command)


@main.group(name="db")
def db_group() -> None:
    """The hub's SQL schema and the item store's schema."""


@db_group.command()
@click.option("--db", "database_url", help="SQLAlchemy URL (default BLACKWIDOW_DATABASE_URL).")
@click.option("--store", "store_url", help="Item store URL (default BLACKWIDOW_STORE).")
def upgrade(database_url: str | None, store_url: str | None) -> None:
    """Apply every migration up to the newest, to the hub's SQL and to the item store."""
    settings = _settings(serves=False, database_url=database_url, store_url=store_url)
    from blackwidow import db
    from blackwidow.core.store import StoreUnavailable, upgrade_store

    db.upgrade(settings.database_url)
    click.echo(f"database upgraded: {db.make_engine(settings.database_url).url!r}")
    try:
        click.echo(f"store upgraded: {upgrade_store(settings.store_url)}")
    except ValueError as error:
        raise click.UsageError(str(error)) from None
    except StoreUnavailable as error:
        raise click.ClickException(str(error)) from None
