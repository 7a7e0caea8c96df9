"""Test hosts in network namespaces: a ``Lab`` makes one namespace per host (WarrenMQ nodes, PostgreSQL
servers, the clients), joined by veth pairs to a bridge in a namespace of its own, and cuts links between
hosts with nftables rules inside the hosts' namespaces. Nothing outside the lab's namespaces changes: the
bridge, the veths and every address (10.77.0.0/24) live inside them, so parallel runs (xdist workers) do not
meet even with the same addresses; only the namespaces' names are global, and they carry the worker id and
the pid. ``close()`` kills what runs inside and deletes the namespaces, whatever happened before.

A cut drops packets both ways (``drop``, not ``reject``): what a partition looks like to TCP, no RST, no ICMP,
the connections simply go silent. Processes run inside with ``ip netns exec``, which execs the command (the
child's pid is the command's own, so signals reach it).

Needs root, iproute2 and nftables (.ci/run installs them); ``unavailable()`` says why not, for a skip."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Sequence

SUBNET = "10.77.0"


def _run(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(args), check=check, capture_output=True, text=True, timeout=30)


def unavailable() -> str | None:
    """Why no lab can be made here, or None when one can (tried once, with a namespace of its own)."""
    if os.geteuid() != 0:
        return "network namespaces need root"
    for tool in ("ip", "nft"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed (iproute2, nftables)"
    probe = f"wmq-probe-{os.getpid()}"
    try:
        made = _run("ip", "netns", "add", probe, check=False)
        if made.returncode != 0:
            return f"cannot create a network namespace: {made.stderr.strip()}"
        table = _run("ip", "netns", "exec", probe, "nft", "add", "table", "inet", "probe", check=False)
        if table.returncode != 0:
            return f"nftables does not work in a network namespace: {table.stderr.strip()}"
        bridge = _run("ip", "-n", probe, "link", "add", "br0", "type", "bridge", check=False)
        if bridge.returncode != 0:
            return f"cannot create a bridge: {bridge.stderr.strip()}"
    finally:
        _run("ip", "netns", "del", probe, check=False)
    return None


def run_id() -> str:
    """Unique among parallel runs on this machine: the xdist worker and the pid."""
    return f"{os.environ.get('PYTEST_XDIST_WORKER', 'gw')}-{os.getpid()}"


class Lab:
    """Hosts on one bridge. ``add(name)`` makes a host and returns its address; ``exec_args(name, cmd)`` is
    ``cmd`` run inside it; ``cut(a, b)`` and ``heal(a, b)`` drop and restore every packet between two
    hosts; ``heal_all()`` restores them all."""

    def __init__(self, prefix: str | None = None) -> None:
        self.prefix = prefix or f"wmq-{run_id()}"
        self.addresses: dict[str, str] = {}
        self.cuts: set[frozenset[str]] = set()
        self._namespaces: list[str] = []
        hub = self._namespace("hub")
        _run("ip", "-n", hub, "link", "add", "br0", "type", "bridge")
        _run("ip", "-n", hub, "link", "set", "br0", "up")

    def _namespace(self, name: str) -> str:
        namespace = f"{self.prefix}-{name}"
        _run("ip", "netns", "add", namespace)
        self._namespaces.append(namespace)
        _run("ip", "-n", namespace, "link", "set", "lo", "up")
        return namespace

    def namespace(self, name: str) -> str:
        return f"{self.prefix}-{name}"

    def add(self, name: str) -> str:
        """A host: its namespace, a veth to the bridge, an address, and an empty nftables table for cuts."""
        assert name not in self.addresses
        assert name != "hub"
        index = len(self.addresses) + 2
        address = f"{SUBNET}.{index}"
        namespace = self._namespace(name)
        hub = self.namespace("hub")
        port = f"p{index}"  # the bridge port, named inside the hub's namespace only
        _run("ip", "-n", hub, "link", "add", port, "type", "veth", "peer", "name", "eth0", "netns", namespace)
        _run("ip", "-n", hub, "link", "set", port, "master", "br0", "up")
        _run("ip", "-n", namespace, "addr", "add", f"{address}/24", "dev", "eth0")
        _run("ip", "-n", namespace, "link", "set", "eth0", "up")
        self._nft(name, "add table inet partition")
        self._nft(name, "add chain inet partition input { type filter hook input priority 0 ; }")
        self._nft(name, "add chain inet partition output { type filter hook output priority 0 ; }")
        self.addresses[name] = address
        return address

    def _nft(self, host: str, rule: str) -> None:
        _run("ip", "netns", "exec", self.namespace(host), "nft", rule)

    def exec_args(self, host: str, cmd: Sequence[str]) -> list[str]:
        return ["ip", "netns", "exec", self.namespace(host), *cmd]

    def cut(self, a: str, b: str) -> None:
        """Drop every packet between ``a`` and ``b``, both ways, in both hosts' namespaces."""
        self.cuts.add(frozenset((a, b)))
        self._apply(a)
        self._apply(b)

    def heal(self, a: str, b: str) -> None:
        self.cuts.discard(frozenset((a, b)))
        self._apply(a)
        self._apply(b)

    def heal_all(self) -> None:
        hosts = {host for cut in self.cuts for host in cut}
        self.cuts.clear()
        for host in hosts:
            self._apply(host)

    def _apply(self, host: str) -> None:
        """The host's rules from ``cuts``, replaced at once (one nft run)."""
        peers = sorted(self.addresses[other] for cut in self.cuts if host in cut for other in cut - {host})
        script = ["flush chain inet partition input", "flush chain inet partition output"]
        for peer in peers:
            script.append(f"add rule inet partition input ip saddr {peer} drop")
            script.append(f"add rule inet partition output ip daddr {peer} drop")
        subprocess.run(
            self.exec_args(host, ["nft", "-f", "-"]),
            input="\n".join(script) + "\n",
            check=True,
            capture_output=True,
            text=True,
            timeout=30,
        )

    def close(self) -> None:
        """Kill every process still inside, then delete the namespaces (the veths and bridge go with them)."""
        for namespace in reversed(self._namespaces):
            pids = _run("ip", "netns", "pids", namespace, check=False).stdout.split()
            for pid in pids:
                try:
                    os.kill(int(pid), 9)
                except (ProcessLookupError, ValueError):
                    pass
            _run("ip", "netns", "del", namespace, check=False)
        self._namespaces.clear()
