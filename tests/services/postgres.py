"""A throwaway PostgreSQL cluster on loopback with trust auth and no fsync: fast, not durable."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
from pathlib import Path

import psycopg

from tests.services.server import LOOPBACK, Service, ServiceError

DEBIAN_ROOT = Path("/usr/lib/postgresql")


def _binary(name: str) -> str:
    """The newest Debian-packaged PostgreSQL's `name` (those binaries are not on PATH)."""
    versions = sorted(DEBIAN_ROOT.glob("*/bin"), key=lambda path: int(path.parent.name))
    if not versions:
        raise ServiceError("PostgreSQL is not installed: run `make services`")
    return str(versions[-1] / name)


class Postgres(Service):
    name = "postgres"
    stop_signal = signal.SIGINT  # "fast" shutdown: do not wait for clients to disconnect

    def __init__(
        self, run_dir: Path, port: int = 15432, host: str = LOOPBACK, namespace: str | None = None
    ) -> None:
        super().__init__(run_dir, port, host, namespace)
        self.data_dir = run_dir / "data"
        if os.geteuid() == 0:
            self.user = "postgres"  # postgres refuses to run as root

    @property
    def url(self) -> str:
        return f"postgresql+psycopg://postgres@{self.host}:{self.port}/postgres"

    def prepare(self) -> None:
        if self.user:
            shutil.chown(self.run_dir, self.user, self.user)
        if (self.data_dir / "PG_VERSION").exists():
            return
        initdb = [_binary("initdb"), "-D", str(self.data_dir), "-U", "postgres"]
        options = ["--auth=trust", "--no-sync", "--no-instructions", "--no-locale", "-E", "UTF8"]
        with open(self.log_path, "ab") as log:
            done = subprocess.run(
                self.wrap([*initdb, *options]),
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=self.run_dir,
                **self.run_as(),
            )
        if done.returncode != 0:
            raise ServiceError(f"initdb failed with status {done.returncode}: see {self.log_path}")
        if self.namespace is not None:  # its clients are the other hosts on its bridge
            with open(self.data_dir / "pg_hba.conf", "a") as hba:
                hba.write("host all all samenet trust\n")

    def command(self) -> list[str]:
        settings = {
            "listen_addresses": self.host,
            "port": self.port,
            "unix_socket_directories": self.run_dir,
            "fsync": "off",
            "synchronous_commit": "off",
            "full_page_writes": "off",
        }
        flags = [item for key, value in settings.items() for item in ("-c", f"{key}={value}")]
        return [_binary("postgres"), "-D", str(self.data_dir), *flags]

    def answers(self) -> bool:
        address = {"host": self.host, "port": self.port, "user": "postgres", "dbname": "postgres"}
        try:
            with psycopg.connect(**address, connect_timeout=2):
                return True
        except psycopg.OperationalError:
            return False
