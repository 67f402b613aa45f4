"""The hub for gunicorn (`gunicorn 'blackwidow.wsgi:app'`): each worker serves the API and
runs a monitor thread and a webhook delivery thread; the leader lock in SQL lets only one of
them run cycles, and a claim on each outbox row lets only one send it.

The settings are checked as every entry point checks them (blackwidow.startup); run without
blackwidow.gunicorn_conf, a bad environment stops a worker with gunicorn's "app failed to
load" status, which stops gunicorn rather than have it boot the worker again and again."""

from blackwidow import startup
from blackwidow.alerts.delivery import delivery_thread
from blackwidow.app import create_app
from blackwidow.monitor.loop import MonitorLoop

GUNICORN_APP_LOAD_ERROR = 4  # gunicorn.arbiter.Arbiter.APP_LOAD_ERROR: the master halts

settings = startup.settings_or_exit(status=GUNICORN_APP_LOAD_ERROR)
app = create_app(settings)
hub = app.extensions["blackwidow"]
MonitorLoop(hub.sessions, settings, hub.alerts).start()
delivery_thread(hub.sessions, settings).start()
