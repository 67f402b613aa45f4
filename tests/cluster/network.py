"""Simulated hosts: one network namespace per host, joined by one Linux bridge on a private
subnet, and the faults between them, made with nftables inside each host's namespace, and
delays on a host's link, made by a user-space delayer (delayer.py: this kernel has no netem).

Nothing routes out: the namespaces have no default route and the only addresses are the
subnet's. The bridge's own address (the test process's side) lets the test reach every host.
Everything made here carries the run's prefix, and `remove` deletes exactly that.
"""

from __future__ import annotations

import fcntl
import ipaddress
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

FAULT_TABLE = "blackwidow_faults"  # the nftables table a fault adds to a host's namespace
DELAYER = Path(__file__).with_name("delayer.py")
SUBNETS = ipaddress.ip_network("10.213.0.0/16")  # /24s picked from here, one per run


class NetworkError(RuntimeError):
    """The machine cannot make the simulated hosts: the message names what is missing."""


def _run(*command: str) -> str:
    done = subprocess.run(command, capture_output=True, text=True, timeout=30)
    if done.returncode != 0:
        raise NetworkError(f"`{' '.join(command)}` failed: {done.stderr.strip()}")
    return done.stdout


def check_machine() -> None:
    """Raise NetworkError naming what this machine lacks to run the cluster tier."""
    if os.geteuid() != 0:
        raise NetworkError(
            "the cluster tier makes network namespaces and a bridge, which needs root "
            f"(running as uid {os.geteuid()})"
        )
    for tool, package in (("ip", "iproute2"), ("nft", "nftables")):
        if shutil.which(tool) is None:
            raise NetworkError(f"`{tool}` is not installed: run `make services` ({package})")


@contextmanager
def _subnet_lock() -> Iterator[None]:
    with open(Path(tempfile.gettempdir()) / "blackwidow-cluster-subnets.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def _free_subnet() -> ipaddress.IPv4Network:
    """A /24 of SUBNETS that no route of this machine touches yet."""
    used = [
        ipaddress.ip_network(line.split()[0], strict=False)
        for line in _run("ip", "-4", "route", "show", "table", "all").splitlines()
        if line.split() and line.split()[0][0].isdigit()
    ]
    for subnet in SUBNETS.subnets(new_prefix=24):
        if not any(subnet.overlaps(route) for route in used):
            return subnet  # type: ignore[return-value]
    raise NetworkError(f"no free /24 left in {SUBNETS}")


@dataclass(frozen=True)
class Host:
    name: str
    namespace: str
    address: str

    def wrapper(self) -> list[str]:
        """The command prefix that runs a process on this host."""
        return ["ip", "netns", "exec", self.namespace]

    def nft(self, script: str) -> None:
        _run(*self.wrapper(), "nft", script)


class Network:
    """Hosts by name, on one bridge; `cut`, `lose`, `silence`, `delay` and `heal` make and end
    the faults."""

    def __init__(self, names: Sequence[str]) -> None:
        check_machine()
        self.prefix = f"bw{secrets.token_hex(2)}"
        self.bridge = f"{self.prefix}-br"
        self.hosts: dict[str, Host] = {}
        self._links: dict[str, str] = {}  # host -> its veth's bridge side
        self._faulty: set[str] = set()
        self._delayers: dict[str, subprocess.Popen[str]] = {}  # host -> its link's delayer
        try:
            with _subnet_lock():  # two runs at once must not pick the same subnet
                self.subnet = _free_subnet()
                addresses = self.subnet.hosts()
                self.gateway = str(next(addresses))  # the bridge's side: the test process
                _run("ip", "link", "add", self.bridge, "type", "bridge")
                _run("ip", "addr", "add", f"{self.gateway}/24", "dev", self.bridge)
                # up within the lock: the subnet's route, which the next run's pick looks
                # for, exists only once the bridge is up
                _run("ip", "link", "set", self.bridge, "up")
            for index, name in enumerate(names):
                host = self.hosts[name] = Host(name, f"{self.prefix}-{name}", str(next(addresses)))
                self._add_host(host, f"{self.prefix}-v{index}")
        except BaseException:
            self.remove()
            raise

    def _add_host(self, host: Host, outside: str) -> None:
        """Its namespace, and a veth pair: `eth0` inside, `outside` on the bridge."""
        _run("ip", "netns", "add", host.namespace)
        self._links[host.name] = outside
        _run("ip", "link", "add", outside, "type", "veth", "peer", "eth0", "netns", host.namespace)
        _run("ip", "link", "set", outside, "master", self.bridge, "up")
        inside = host.wrapper()
        _run(*inside, "ip", "addr", "add", f"{host.address}/24", "dev", "eth0")
        _run(*inside, "ip", "link", "set", "eth0", "up")
        _run(*inside, "ip", "link", "set", "lo", "up")

    def __getitem__(self, name: str) -> Host:
        return self.hosts[name]

    def _drop(self, host: str, rules: Iterable[str]) -> None:
        """Add drop rules to `host`'s fault table, making the table on first use."""
        table = f"inet {FAULT_TABLE}"
        if host not in self._faulty:
            self[host].nft(
                f"add table {table}; "
                f"add chain {table} input {{ type filter hook input priority 0; }}; "
                f"add chain {table} output {{ type filter hook output priority 0; }}"
            )
            self._faulty.add(host)
        self[host].nft("; ".join(f"add rule {table} {rule} drop" for rule in rules))

    def cut(self, host: str, peers: Iterable[str]) -> None:
        """A partition: nothing passes between `host` and `peers`, either way."""
        addresses = self._set(peers)
        self._drop(host, [f"input ip saddr {addresses}", f"output ip daddr {addresses}"])

    def lose(self, sender: str, receiver: str) -> None:
        """One-way loss: every packet from `sender` to `receiver` is lost, none the other way."""
        self._drop(receiver, [f"input ip saddr {self[sender].address}"])

    def silence(self, host: str) -> None:
        """A silent host: every packet to or from it is dropped, none refused, as when a host
        hangs or its link fails without a word."""
        self._drop(host, ['input iifname "eth0"', 'output oifname "eth0"'])

    def delay(self, host: str, seconds: float) -> None:
        """Every frame to and from `host` `seconds` late, each way: its veth's bridge side is
        moved into a namespace of its own and spliced to a new port of the bridge through a
        delayer, so the host keeps its address and MAC."""
        outside, splice = self._links[host], self._splice(host)
        spliced = self._delay_namespace(host)
        _run("ip", "netns", "add", spliced)
        _run("ip", "link", "set", outside, "netns", spliced)
        _run("ip", "link", "add", splice, "type", "veth", "peer", "splice", "netns", spliced)
        _run("ip", "link", "set", splice, "master", self.bridge, "up")
        for link in (outside, "splice"):
            _run("ip", "-n", spliced, "link", "set", link, "up")
        command = [sys.executable, str(DELAYER), outside, "splice", str(seconds)]
        delayer = subprocess.Popen(
            ["ip", "netns", "exec", spliced, *command], stdout=subprocess.PIPE, text=True
        )
        self._delayers[host] = delayer
        assert delayer.stdout is not None
        if not delayer.stdout.readline().startswith("delaying"):
            raise NetworkError(f"the delayer on {host}'s link exited ({delayer.wait()})")

    def _delay_namespace(self, host: str) -> str:
        return f"{self.prefix}-delay-{host}"

    def _splice(self, host: str) -> str:
        """The bridge's port of a delayed host's link (its veth's name, `-v` made `-d`)."""
        return self._links[host].replace("-v", "-d")

    def _undelay(self, host: str) -> None:
        """The delayer stopped, the host's veth back on the bridge, the splice removed."""
        delayer = self._delayers.pop(host)
        delayer.terminate()
        delayer.wait()
        outside, spliced = self._links[host], self._delay_namespace(host)
        _run("ip", "-n", spliced, "link", "set", outside, "netns", str(os.getpid()))
        _run("ip", "link", "set", outside, "master", self.bridge, "up")
        _run("ip", "link", "delete", self._splice(host))
        _run("ip", "netns", "delete", spliced)

    def heal(self) -> None:
        """End every fault: each fault table made is deleted, each delay undone."""
        for host in sorted(self._faulty):
            self[host].nft(f"delete table inet {FAULT_TABLE}")
        self._faulty.clear()
        for host in sorted(self._delayers):
            self._undelay(host)

    def _set(self, names: Iterable[str]) -> str:
        return "{ " + ", ".join(self[name].address for name in names) + " }"

    def remove(self) -> None:
        """Delete what this network made: its veths, namespaces (their fault tables go with
        them) and bridge; a part already gone is skipped."""
        for delayer in self._delayers.values():
            delayer.kill()
            delayer.wait()
        for link in self._links.values():  # at once: a namespace's own veth would go later
            subprocess.run(["ip", "link", "delete", link], capture_output=True)
        for host in self._links:
            subprocess.run(["ip", "link", "delete", self._splice(host)], capture_output=True)
        for host in self.hosts.values():
            subprocess.run(["ip", "netns", "delete", host.namespace], capture_output=True)
            delayed = self._delay_namespace(host.name)
            subprocess.run(["ip", "netns", "delete", delayed], capture_output=True)
        subprocess.run(["ip", "link", "delete", self.bridge], capture_output=True)
        self.hosts.clear()
        self._links.clear()
        self._faulty.clear()
        self._delayers.clear()
