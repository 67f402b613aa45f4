"""The line every benchmark starts with: what it ran on, so figures are read against it."""

from __future__ import annotations

import os
import platform


def described() -> str:
    return (
        f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    )
