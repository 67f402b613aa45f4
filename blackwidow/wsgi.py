"""The hub for gunicorn (`gunicorn 'blackwidow.wsgi:app'`): each worker serves the API and
runs a monitor thread; the leader lock in SQL lets only one of them run cycles."""

import logging

from blackwidow.app import create_app
from blackwidow.monitor.loop import MonitorLoop
from blackwidow.settings import from_env

logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
settings = from_env()
app = create_app(settings)
MonitorLoop(app.extensions["blackwidow"].sessions, settings).start()
