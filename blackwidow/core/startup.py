"""What every entry point that serves does before it binds: check the settings with one
function, so a bad environment stops each alike (one message on stderr, a non-zero status),
then set up logging (blackwidow.core.logs) and warn of every BLACKWIDOW_* variable that
nothing reads, with the name it was likely meant to be; and stop in one line, the same way,
when the item store cannot be opened (`store_refusal`)."""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from blackwidow.core import logs
from blackwidow.core.settings import (
    Settings,
    SettingsError,
    for_servers,
    from_env,
    unknown_variables,
    variables,
)
from blackwidow.core.store import StoreRefused

log = logging.getLogger(__name__)

EXIT_STATUS = 2  # as for the command line's other input errors


def settings_or_exit(
    *,
    serves: bool = True,
    log_level: str | int = "INFO",
    status: int = EXIT_STATUS,
    overrides: Mapping[str, Any] | None = None,
) -> Settings:
    """The settings, checked, with logging set up in their format; else the problems on
    stderr and SystemExit(`status`). A process that `serves` (a hub or node) needs the
    cluster secret too; `blackwidow db upgrade` does not. `overrides` are a command's
    options by field name (`--db`: database_url), checked as their variables are."""
    environ = {**os.environ, **variables(overrides or {})}
    try:
        settings = for_servers(environ) if serves else from_env(environ)
    except SettingsError as error:
        print(f"blackwidow: cannot start; fix the environment:\n{error}", file=sys.stderr)
        sys.stderr.flush()
        raise SystemExit(status) from None
    logs.configure(settings.log_format, log_level)
    warn_of_unknown(environ)
    return settings


def warn_of_unknown(environ: Mapping[str, str]) -> None:
    """One warning for each BLACKWIDOW_* variable nothing reads, with the nearest known name:
    a misspelt one would otherwise leave its default in force without a word."""
    for name, nearest in unknown_variables(environ).items():
        guess = f" did_you_mean={nearest}" if nearest else ""
        log.warning("unknown variable ignored variable=%s%s", name, guess)


@contextmanager
def store_refusal(status: int = EXIT_STATUS) -> Iterator[None]:
    """Where a process opens its item store: a store it cannot open (StoreRefused, which names
    BLACKWIDOW_STORE and the cause) stops it with that one line on stderr and `status`, rather
    than a traceback. A store that does not answer yet is not refused: the process starts and
    says so (/readyz, health) until it does."""
    try:
        yield
    except StoreRefused as refusal:
        print(f"blackwidow: cannot start: {refusal}", file=sys.stderr)
        sys.stderr.flush()
        raise SystemExit(status) from None
