"""One logging set-up for every process (the `blackwidow` command, gunicorn and its workers,
nodes): one handler on stderr, in text or in JSON lines (BLACKWIDOW_LOG_FORMAT).

gunicorn's own loggers lose their handlers and pass their records to the same one, so its
lines look like the app's. A JSON line is one object: time (ISO 8601, UTC), level, logger,
message, and exception (the traceback's text) when there is one.
"""

from __future__ import annotations

import logging
import logging.config
import sys
import threading
from types import TracebackType
from typing import Any

TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s %(message)s"
FORMATTERS: dict[str, dict[str, Any]] = {
    "text": {"format": TEXT_FORMAT},
    "json": {
        "()": "pythonjsonlogger.json.JsonFormatter",
        "fmt": "%(levelname)s %(name)s %(message)s",
        "rename_fields": {"levelname": "level", "name": "logger", "exc_info": "exception"},
        "timestamp": "time",
    },
}
GUNICORN_LOGGERS = ("gunicorn.error", "gunicorn.access")

log = logging.getLogger(__name__)


class StderrHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """A handler on whatever sys.stderr is when a record comes (as logging's last resort is),
    not on the stream it was when set up, which a test's runner may have closed since."""

    def __init__(self) -> None:
        logging.Handler.__init__(self)

    @property  # type: ignore[override]
    def stream(self) -> Any:
        return sys.stderr


def config(log_format: str, level: str | int = "INFO") -> dict[str, Any]:
    """The logging.config dictionary: what gunicorn takes as `logconfig_dict` (it replaces
    gunicorn's defaults key by key) and what `configure` applies."""
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"blackwidow": FORMATTERS[log_format]},
        "handlers": {"stderr": {"()": StderrHandler, "formatter": "blackwidow"}},
        "root": {"level": level, "handlers": ["stderr"]},
        # no handler of their own: their records reach the root's, in the same format
        "loggers": {
            **{name: {"handlers": [], "propagate": True} for name in GUNICORN_LOGGERS},
            # Alembic names each of its plugins at INFO whenever it loads: noise at every start
            "alembic.runtime.plugins": {"level": "WARNING"},
        },
    }


def configure(log_format: str, level: str | int = "INFO") -> None:
    """Apply `config`; warnings and uncaught exceptions go through it too, so that with JSON
    every line on stderr is an object."""
    logging.config.dictConfig(config(log_format, level))
    logging.captureWarnings(True)
    sys.excepthook = _log_uncaught
    threading.excepthook = _log_uncaught_in_thread


def _log_uncaught(
    kind: type[BaseException], error: BaseException, trace: TracebackType | None
) -> None:
    if issubclass(kind, KeyboardInterrupt):  # Ctrl-C: Python's own word, not an error
        sys.__excepthook__(kind, error, trace)
        return
    log.critical("uncaught exception", exc_info=(kind, error, trace))


def _log_uncaught_in_thread(args: threading.ExceptHookArgs) -> None:
    if args.exc_type is SystemExit:
        return
    assert args.exc_value is not None
    log.critical(
        "uncaught exception thread=%s",
        args.thread.name if args.thread else "?",
        exc_info=(args.exc_type, args.exc_value, args.exc_traceback),
    )
