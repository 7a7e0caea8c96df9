"""What every Jepsen-style HA schedule shares (tests/ha/test_partitions.py, test_replicated_store.py,
test_slow_link.py, test_random_mix.py): an HA pair of WarrenMQ nodes on hosts of their own (network
namespaces, tests/ha/netns.py), the client process recording every operation (tests/ha/partition_client.py),
starting the load, draining it, and the figures each run prints."""

from __future__ import annotations

import itertools
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from tests.ha import netns
from tests.ha.checker import History, Verdict, active_spells, check
from tests.ha.netns_nodes import NetnsNode
from tests.ha.nodes import ROOT
from tests.postgres.cluster import PostgresCluster

LEASE_S = 3.0
NODES = ("n1", "n2")


def wait(condition: Callable[[], object], timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"{what}: not within {timeout_s} s"
        time.sleep(0.05)


@dataclass
class Pair:
    lab: netns.Lab
    nodes: dict[str, NetnsNode]
    out: Path
    client: subprocess.Popen[bytes] | None = None
    cuts: list[tuple[str, float]] = field(default_factory=list)  # (kind, when)
    heals: list[tuple[str, float]] = field(default_factory=list)

    def active(self) -> str | None:
        """The node whose last spell is still open (its process running), if exactly one."""
        names = [
            name
            for name, node in self.nodes.items()
            if node.running
            and (spells := active_spells(node.log_path, name))
            and spells[-1].end == float("inf")
        ]
        return names[0] if len(names) == 1 else None

    def standby_of(self, active: str) -> str:
        return next(name for name in self.nodes if name != active)

    def history(self) -> History:
        return History.read(self.out) if self.out.exists() else History()

    def served_after(self, moment: float) -> Callable[[], bool]:
        """A message sent after ``moment`` has been confirmed."""
        return lambda: self.history().first_confirm_sent_after(moment) is not None

    def settled(self) -> bool:
        """One node active and both running (a deposed one restarted by its supervisor as a standby)."""
        return self.active() is not None and all(node.running for node in self.nodes.values())

    def close(self) -> None:
        if self.client is not None and self.client.poll() is None:
            self.client.kill()
        for node in self.nodes.values():
            node.unsupervise()


def make_nodes(lab: netns.Lab, dsn: str, log_dir: Path, lease_s: float = LEASE_S) -> dict[str, NetnsNode]:
    """The pair's nodes (not started), on hosts ``NODES`` already added to ``lab``."""
    return {name: NetnsNode(lab, name, dsn, log_dir, lease_s) for name in NODES}


def hosts_with_postgres(lab: netns.Lab) -> tuple[str, PostgresCluster]:
    """The lab's hosts: PostgreSQL started in a "pg" namespace of its own (its address, and the cluster, which
    the caller destroys), one per node and one for the clients; the nodes' subnet may log in."""
    address = lab.add("pg")
    for name in (*NODES, "clients"):
        lab.add(name)
    postgres = PostgresCluster.create(host=address, netns=lab.namespace("pg"))
    try:
        with open(postgres.data_dir / "pg_hba.conf", "a") as hba:
            hba.write(f"host all all {netns.SUBNET}.0/24 scram-sha-256\n")
        postgres.start()
    except BaseException:
        postgres.destroy()
        raise
    return address, postgres


def start(pair: Pair) -> None:
    """The first node active, the second standing by, then the clients, until 50 confirms."""
    first, second = pair.nodes.values()
    first.supervise()
    wait(lambda: pair.active() == first.name, 60, "the first node active")
    second.supervise()
    second.wait_event("standby")
    hosts = [node.host for node in pair.nodes.values()]
    args = [sys.executable, "-m", "tests.ha.partition_client", str(pair.out), *hosts]
    pair.client = subprocess.Popen(pair.lab.exec_args("clients", args), cwd=ROOT)
    wait(lambda: len(pair.history().confirmed) >= 50, 60, "50 confirms before the first fault")


def drain(pair: Pair) -> None:
    """Stop publishing, let the consumer have everything confirmed, then stop it. Drained only once the
    publisher has said it stopped: a publish in flight when it was told to may still be confirmed after the
    consumer has had everything confirmed before it."""
    pair.out.with_name(pair.out.name + ".stop-publishing").touch()

    def drained() -> bool:
        history = pair.history()
        return history.publisher_stopped and set(history.confirmed) <= history.delivered()

    try:
        wait(drained, 90, "every confirmed message delivered")
    finally:
        pair.out.with_name(pair.out.name + ".stop").touch()
        assert pair.client is not None
        pair.client.wait(30)


def verdict(pair: Pair) -> Verdict:
    """The checker on what the clients recorded and the nodes logged (after ``drain``)."""
    return check(pair.history(), {name: node.log_path for name, node in pair.nodes.items()})


def longest_gap_between_confirms(history: History) -> float:
    times = sorted(history.confirmed.values())
    return max((b - a for a, b in itertools.pairwise(times)), default=0.0)


def figures(values: list[float]) -> str:
    if not values:
        return "-"
    return f"median {statistics.median(values):.2f} s, worst {max(values):.2f} s"


def summary(name: str, result: Verdict, failovers_s: list[float], recoveries_s: list[float]) -> str:
    """The line each schedule prints (docs/high-availability.md's tables come from it)."""
    history = result.history
    return (
        f"\n{name}: {len(history.confirmed)} confirmed, {len(result.lost)} lost, {result.duplicates} "
        f"duplicates ({len(result.unflagged)} unflagged), {len(history.lost)} unanswered, "
        f"{len(result.spells)} active spells; failover {figures(failovers_s)}; "
        f"recovery {figures(recoveries_s)}; "
        f"longest gap between confirms {longest_gap_between_confirms(history):.2f} s"
    )
