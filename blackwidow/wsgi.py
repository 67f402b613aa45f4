"""The hub for gunicorn (`gunicorn 'blackwidow.wsgi:app'`): each worker serves the API and
runs a monitor thread and a webhook delivery thread; the leader lock in SQL lets only one of
them run cycles, and a claim on each outbox row lets only one send it."""

import logging

from blackwidow.alerts.delivery import delivery_thread
from blackwidow.app import create_app
from blackwidow.monitor.loop import MonitorLoop
from blackwidow.settings import from_env

logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
settings = from_env()
app = create_app(settings)
hub = app.extensions["blackwidow"]
MonitorLoop(hub.sessions, settings, hub.alerts).start()
delivery_thread(hub.sessions, settings).start()
