"""A node's load as each poll reports it: its process's CPU and memory in use (psutil).

psutil rather than the standard library: `resource` gives only the peak resident memory, not
what is in use now, and CPU in use is CPU time between two readings, which psutil keeps.
"""

from __future__ import annotations

import psutil


class ProcessLoad:
    """CPU in use since the previous reading (percent of one core, so above 100 on several)
    and resident memory, of this node's process; a reading costs a few system calls."""

    def __init__(self) -> None:
        self._process = psutil.Process()
        self._process.cpu_percent(None)  # the first reading has nothing to compare with

    def __call__(self) -> dict[str, float]:
        return {
            "cpu_percent": round(self._process.cpu_percent(None), 1),
            "memory_bytes": self._process.memory_info().rss,
        }
