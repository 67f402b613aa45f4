"""Contention the database cannot resolve in time: the request runs again, briefly, and then
gets a 503 with Retry-After, never a 500. A database that does not answer at all gets the
same 503 at once, after the engine's bounded waits (blackwidow.db.make_engine), and its
outage is one log line for the process (blackwidow.readiness.database_outage).

Running a view again is safe: its writes are one transaction, which the database rolled back
whole when it refused it (blackwidow.db.is_contention), and nothing a view does before it
commits has effects outside SQL.
"""

from __future__ import annotations

import functools
import logging
import random
import time
from collections.abc import Callable
from typing import Any

from flask import Flask, request
from sqlalchemy.exc import DBAPIError, TimeoutError

from blackwidow import readiness
from blackwidow.api.context import hub
from blackwidow.core.errors import ApiError
from blackwidow.db import is_contention, is_unreachable
from sources.backoff import Backoff

log = logging.getLogger(__name__)

RETRIES = 2  # a quick refusal is run again twice at most
PAUSE = Backoff(first=0.05, cap=0.1, jitter=0.5)  # seconds before each retry
RETRY_AFTER = 1  # seconds, for the caller once the retries are spent


def retrying(view: Callable[..., Any]) -> Callable[..., Any]:
    """The view, run again after a quick refusal (a deadlock, a serialization failure, a
    snapshot too old to write from). A refusal that came after waiting out much of the busy
    timeout is not tried again: the caller would wait that long once more."""

    @functools.wraps(view)
    def run(*args: Any, **kwargs: Any) -> Any:
        budget = hub().settings.database_busy_timeout
        failures = 0
        while True:
            started = time.monotonic()
            try:
                return view(*args, **kwargs)
            except (DBAPIError, TimeoutError) as error:
                if is_unreachable(error):
                    raise _unreachable(error) from None
                if not is_contention(error):
                    raise
                waited = time.monotonic() - started
                failures += 1
                if failures > RETRIES or waited >= budget / 2:
                    raise _busy(waited) from None
            time.sleep(PAUSE.delay(failures, random.random()))

    return run


def _busy(waited: float) -> ApiError:
    log.warning("database busy, answered 503 endpoint=%s waited=%.2fs", request.endpoint, waited)
    message = "the database is busy: try again shortly"
    return ApiError(503, "busy", message, retry_after=RETRY_AFTER)


def _unreachable(error: BaseException) -> ApiError:
    readiness.database_outage(hub().sessions).failed(error)  # one line per outage, not a request
    message = "the database does not answer: try again shortly"
    return ApiError(503, "database_unavailable", message, retry_after=RETRY_AFTER)


def retry_every_view(app: Flask) -> None:
    """Wrap every view registered so far; call it once the blueprints are."""
    for endpoint, view in list(app.view_functions.items()):
        app.view_functions[endpoint] = retrying(view)
