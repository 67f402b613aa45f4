"""A Cassandra node run straight from the jars that `install` cached, with its data kept in its
run dir so it can be stopped and started again like a real outage: by default the suite's
single node on loopback; given a network namespace, seeds and a token, one node of a ring (the
cluster tier's three)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from cassandra import DriverException, ProtocolVersion
from cassandra.cluster import EXEC_PROFILE_DEFAULT, Cluster, ExecutionProfile, NoHostAvailable
from cassandra.policies import RoundRobinPolicy
from cassandra.protocol import ErrorMessage

from tests.services.server import LOOPBACK, Service, ServiceError, port_answers

VERSION = "5.0.9"

HEAP = ("512m", "1g")  # -Xms, -Xmx of the suite's single node
JVM_OPTIONS = [
    *("-XX:+UseG1GC", "-XX:+ExitOnOutOfMemoryError"),
    "-Djdk.attach.allowAttachSelf=true",
    "-Dio.netty.tryReflectionSetAccessible=true",
]

# Cassandra's conf/jvm17-server.options: what its code reaches into on Java 17.
JAVA17_EXPORTS = [
    "java.base/jdk.internal.misc",
    "java.management.rmi/com.sun.jmx.remote.internal.rmi",
    "java.rmi/sun.rmi.registry",
    "java.rmi/sun.rmi.server",
    "java.sql/java.sql",
    "java.base/java.lang.ref",
    "jdk.unsupported/sun.misc",
    "jdk.compiler/com.sun.tools.javac.file",
    "jdk.attach/sun.tools.attach",
]
JAVA17_OPENS = [
    "java.base/java.lang.module",
    "java.base/jdk.internal.loader",
    "java.base/jdk.internal.ref",
    "java.base/jdk.internal.reflect",
    "java.base/jdk.internal.math",
    "java.base/jdk.internal.module",
    "java.base/jdk.internal.util.jar",
    "jdk.management/com.sun.management.internal",
    "java.base/sun.nio.ch",
    "java.base/java.io",
    "java.base/java.lang.reflect",
    "jdk.compiler/com.sun.tools.javac",
    "java.base/java.lang",
    "java.base/java.util",
]

CONFIG = """\
cluster_name: {cluster_name}
auto_snapshot: false
num_tokens: 1
partitioner: org.apache.cassandra.dht.Murmur3Partitioner
commitlog_sync: periodic
commitlog_sync_period: 10000ms
data_file_directories: [{run_dir}/data]
commitlog_directory: {run_dir}/commitlog
saved_caches_directory: {run_dir}/saved_caches
hints_directory: {run_dir}/hints
cdc_raw_directory: {run_dir}/cdc_raw
seed_provider:
  - class_name: org.apache.cassandra.locator.SimpleSeedProvider
    parameters:
      - seeds: "{seeds}"
listen_address: {host}
rpc_address: {host}
storage_port: {storage_port}
native_transport_port: {port}
start_native_transport: true
endpoint_snitch: SimpleSnitch
"""

# A node of a ring started with its peers at once: its token set, nothing streamed to it.
RING_MEMBER = """\
initial_token: {token}
auto_bootstrap: false
"""

# INFO to stdout, which start() sends to the log file (the built-in default is DEBUG).
LOGGING = """\
<configuration>
  <appender name="OUT" class="ch.qos.logback.core.ConsoleAppender">
    <encoder><pattern>%date{ISO8601} %-5level [%thread] %logger{0}: %msg%n</pattern></encoder>
  </appender>
  <root level="INFO"><appender-ref ref="OUT"/></root>
</configuration>
"""


def jar_dir() -> Path:
    """Where tests/services/install puts the Cassandra jars."""
    cache = Path(os.environ.get("BLACKWIDOW_SERVICE_CACHE", "~/.cache/blackwidow")).expanduser()
    return cache / f"cassandra-{VERSION}" / "lib"


def local_cluster(host: str, port: int) -> Cluster:
    """A driver cluster for one local node, set up so the driver has nothing to warn about."""
    profile = ExecutionProfile(load_balancing_policy=RoundRobinPolicy(), request_timeout=10)
    return Cluster(
        [host],
        port=port,
        protocol_version=ProtocolVersion.V5,
        execution_profiles={EXEC_PROFILE_DEFAULT: profile},
        connect_timeout=5,
    )


@dataclass(frozen=True)
class CassandraEndpoint:
    """Where tests reach a Cassandra, whether this session started it or found it running."""

    host: str
    port: int

    @property
    def contact_points(self) -> str:
        return f"{self.host}:{self.port}"


class Cassandra(Service):
    name = "cassandra"
    stop_timeout = 60.0  # it flushes memtables on the way down
    ready_timeout = 120.0

    def __init__(
        self,
        run_dir: Path,
        port: int = 19042,
        storage_port: int = 17000,
        host: str = LOOPBACK,
        cluster_name: str = "blackwidow-tests",
        quick_jit: bool = True,
        namespace: str | None = None,
        seeds: Sequence[str] = (),
        heap: tuple[str, str] = HEAP,
        token: int | None = None,
        durable_schema: bool = False,
    ) -> None:
        """`seeds` are the ring's addresses (on `storage_port`), this node's own by default;
        `token`, set, makes it a ring member that joins without bootstrapping, so the ring's
        nodes start at once; `heap` is (-Xms, -Xmx). `durable_schema` logs schema changes to
        the commit log like any write, so a node killed -9 comes back with its keyspaces;
        without it schema changes are faster, and a kill loses them."""
        super().__init__(run_dir, port, host, namespace)
        self.storage_port = storage_port
        self.cluster_name = cluster_name
        self.quick_jit = quick_jit
        self.seeds = tuple(seeds) or (host,)
        self.heap = heap
        self.token = token
        self.durable_schema = durable_schema

    @property
    def endpoint(self) -> CassandraEndpoint:
        return CassandraEndpoint(self.host, self.port)

    def prepare(self) -> None:
        if not jar_dir().is_dir():
            raise ServiceError(f"no Cassandra jars in {jar_dir()}: run `make services`")
        settings = {
            "cluster_name": self.cluster_name,
            "run_dir": self.run_dir,
            "host": self.host,
            "port": self.port,
            "storage_port": self.storage_port,
            "seeds": ",".join(f"{seed}:{self.storage_port}" for seed in self.seeds),
        }
        member = "" if self.token is None else RING_MEMBER.format(token=self.token)
        (self.run_dir / "cassandra.yaml").write_text(CONFIG.format(**settings) + member)
        (self.run_dir / "logback.xml").write_text(LOGGING)

    def command(self) -> list[str]:
        modules = [f"--add-exports={name}=ALL-UNNAMED" for name in JAVA17_EXPORTS]
        modules += [f"--add-opens={name}=ALL-UNNAMED" for name in JAVA17_OPENS]
        properties = {
            "cassandra.config": (self.run_dir / "cassandra.yaml").as_uri(),
            "logback.configurationFile": self.run_dir / "logback.xml",
            "cassandra-foreground": "yes",
            "cassandra.storagedir": self.run_dir,
            "cassandra.skip_wait_for_gossip_to_settle": 0,
            "cassandra.ring_delay_ms": 100,
            "cassandra.superuser_setup_delay_ms": 0,
        }
        if not self.durable_schema:  # system tables skip the commit log: faster schema changes
            properties["cassandra.unsafesystem"] = "true"
        defines = [f"-D{key}={value}" for key, value in properties.items()]
        # Quick JIT only: start-up counts in tests, peak speed does not (benchmarks turn it off).
        jit = ["-XX:TieredStopAtLevel=1"] if self.quick_jit else []
        return [
            "java",
            *(f"-Xms{self.heap[0]}", f"-Xmx{self.heap[1]}"),
            *JVM_OPTIONS,
            *jit,
            *modules,
            *defines,
            *("-cp", f"{jar_dir()}/*", "org.apache.cassandra.service.CassandraDaemon"),
        ]

    def answers(self) -> bool:
        """A CQL query answers: the port opens well before Cassandra can serve one."""
        if not port_answers(self.host, self.port):
            return False
        cluster = local_cluster(self.host, self.port)
        try:
            session = cluster.connect()
            session.execute("select release_version from system.local", timeout=5)
            return True
        except (NoHostAvailable, DriverException, ErrorMessage):
            return False
        finally:
            cluster.shutdown()
