"""The hub for gunicorn: `gunicorn 'blackwidow.wsgi:app'` serves the API and runs a monitor
thread and a webhook delivery thread in each worker (the leader lock in SQL lets only one of
them run cycles, and a claim on each outbox row lets only one send it);
`gunicorn 'blackwidow.wsgi:hub_app(monitor=False)'` serves without the monitor, which a
`blackwidow monitor` process beside it runs (the Procfile's web and monitor), so polling a
thousand nodes never takes the interpreter that answers requests.

The settings are checked as every entry point checks them (blackwidow.core.startup); run without
blackwidow.gunicorn_conf, a bad environment stops a worker with gunicorn's "app failed to
load" status, which stops gunicorn rather than have it boot the worker again and again."""

from flask import Flask

from blackwidow.alerts.delivery import delivery_thread
from blackwidow.app import create_app
from blackwidow.core import startup
from blackwidow.monitor.loop import MonitorLoop

GUNICORN_APP_LOAD_ERROR = 4  # gunicorn.arbiter.Arbiter.APP_LOAD_ERROR: the master halts


def hub_app(monitor: bool = True) -> Flask:
    """A worker's app, its background threads started."""
    settings = startup.settings_or_exit(status=GUNICORN_APP_LOAD_ERROR)
    with startup.store_refusal(GUNICORN_APP_LOAD_ERROR):
        app = create_app(settings)
    hub = app.extensions["blackwidow"]
    if monitor:
        MonitorLoop(hub.sessions, settings, hub.alerts).start()
    delivery_thread(hub.sessions, settings, hub.alerts).start()
    return app


def __getattr__(name: str) -> Flask:
    """`blackwidow.wsgi:app`, made when gunicorn's worker asks for it, not on import."""
    if name != "app":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return hub_app()
