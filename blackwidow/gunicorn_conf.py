"""gunicorn's settings for the hub (`gunicorn -c python:blackwidow.gunicorn_conf ...`): the
settings checked before gunicorn binds, its logging in the hub's one format, and one directory
for prometheus-client's multiprocess mode.

The settings, and that the item store opens, are checked as `blackwidow hub` checks them
(blackwidow.core.startup): with a bad environment gunicorn stops at once with the same message
and status, rather than serving workers that fail every request or answer every node 401.

The metrics directory, so a scrape of any worker counts the API requests of every worker
(blackwidow.metrics.hub), is PROMETHEUS_MULTIPROC_DIR when set, else a fresh temporary one.
When gunicorn starts, the files earlier workers left there are deleted (they would be counted
again) and the variable is set for the workers, which inherit it before any of them imports
prometheus-client. Not for `--preload`, which would load the app before this runs.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

from blackwidow.core import logs, startup
from blackwidow.core.store import open_store

MULTIPROCESS_VARIABLE = "PROMETHEUS_MULTIPROC_DIR"

settings = startup.settings_or_exit()
with startup.store_refusal():  # in the master: a worker would fail to load, each alike
    open_store(settings.store_url).close()
logconfig_dict = logs.config(settings.log_format)
# gunicorn's control socket has one path per user ($XDG_RUNTIME_DIR or ~/.gunicorn): two hubs
# on one host would take it from each other, and the hub is managed by signals, not by it
control_socket_disable = True


def on_starting(server: Any) -> None:
    directory = Path(settings.metrics_dir or tempfile.mkdtemp(prefix="blackwidow-metrics-"))
    directory.mkdir(parents=True, exist_ok=True)
    for left in directory.glob("*.db"):  # only prometheus-client's own files
        left.unlink()
    os.environ[MULTIPROCESS_VARIABLE] = str(directory)
