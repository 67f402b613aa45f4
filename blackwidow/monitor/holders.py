"""Hub processes as lock holders: where one runs, and whether one on this machine has ended.

A holder is named `host:pid:id`. Its pid means something only to processes of the same
machine boot and pid namespace (its place); there, a pid that no longer runs is a holder
that died, and its locks need not be waited out.
"""

from __future__ import annotations

import os
from pathlib import Path

_BOOT_ID = Path("/proc/sys/kernel/random/boot_id")


def here() -> str | None:
    """This process's place, or None where /proc cannot tell (no lock is then taken early)."""
    try:
        boot = _BOOT_ID.read_text().strip()
        namespace = os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        return None
    return f"{boot}/{namespace}"


def pid_of(holder: str) -> int | None:
    parts = holder.rsplit(":", 2)
    return int(parts[1]) if len(parts) == 3 and parts[1].isdigit() else None


def ended(pid: int) -> bool:
    """True when no process of this place has the pid, or only its unreaped remains."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return True
    except OSError:  # unreadable: assume it runs
        return False
    return stat.rsplit(")", 1)[-1].split()[0] == "Z"  # the state follows the command name


def departed(holder: str | None, holder_place: str | None, me: str, place: str | None) -> bool:
    """Whether `holder` is another process of this place that has ended."""
    if holder is None or holder == me or place is None or holder_place != place:
        return False
    pid = pid_of(holder)
    return pid is not None and pid != os.getpid() and ended(pid)
