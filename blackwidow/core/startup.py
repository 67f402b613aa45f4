"""What every entry point that serves does before it binds: check the settings with one
function, so a bad environment stops each alike (one message on stderr, a non-zero status),
then set up logging (blackwidow.core.logs)."""

from __future__ import annotations

import sys

from blackwidow.core import logs
from blackwidow.core.settings import Settings, SettingsError, for_servers, from_env

EXIT_STATUS = 2  # as for the command line's other input errors


def settings_or_exit(
    *, serves: bool = True, log_level: str | int = "INFO", status: int = EXIT_STATUS
) -> Settings:
    """The settings, checked, with logging set up in their format; else the problems on
    stderr and SystemExit(`status`). A process that `serves` (a hub or node) needs the
    cluster secret too; `blackwidow db upgrade` does not."""
    try:
        settings = for_servers() if serves else from_env()
    except SettingsError as error:
        print(f"blackwidow: cannot start; fix the environment:\n{error}", file=sys.stderr)
        sys.stderr.flush()
        raise SystemExit(status) from None
    logs.configure(settings.log_format, log_level)
    return settings
