"""A throwaway redis-server on loopback: no snapshots, no append-only file."""

from __future__ import annotations

import shutil
from pathlib import Path

import redis

from tests.services.server import LOOPBACK, Service, ServiceError


class Redis(Service):
    name = "redis"

    def __init__(self, run_dir: Path, port: int = 16379, host: str = LOOPBACK) -> None:
        super().__init__(run_dir, port, host)

    @property
    def url(self) -> str:
        return f"redis://{self.host}:{self.port}/0"

    def command(self) -> list[str]:
        binary = shutil.which("redis-server")
        if binary is None:
            raise ServiceError("redis-server is not installed: run `make services`")
        return [
            binary,
            *("--bind", self.host, "--port", str(self.port), "--dir", str(self.run_dir)),
            *("--save", "", "--appendonly", "no"),
        ]

    def answers(self) -> bool:
        client = redis.Redis(self.host, self.port, socket_timeout=2, socket_connect_timeout=2)
        try:
            return bool(client.ping())
        except redis.RedisError:
            return False
        finally:
            client.close()
