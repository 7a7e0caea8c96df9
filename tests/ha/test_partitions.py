"""An HA pair under network partitions, Jepsen-style: two WarrenMQ nodes, PostgreSQL and the clients each on
a host of its own (network namespaces, tests/ha/netns.py), a publisher with confirms and a consumer with acks
recording every operation (tests/ha/partition_client.py), links cut and healed on a schedule with a fixed
seed, and after healing and draining the checker (tests/ha/checker.py): nothing confirmed lost, nothing
delivered that was never published, every repeated delivery flagged redelivered, never two nodes serving;
and every cut of the active node from the database failed over within the lease plus 5 s, before the
partition healed. Each partition lasts PARTITION_S: a deliberate sleep, the schedule itself.

Prints per schedule the confirmed count, duplicates, failover and recovery times (docs/high-availability.md
has the figures and the command)."""

from __future__ import annotations

import itertools
import os
import random
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.ha import netns
from tests.ha.checker import History, active_spells, check
from tests.ha.netns_nodes import NetnsNode
from tests.ha.nodes import ROOT
from tests.postgres.cluster import PostgresCluster
from tests.postgres.cluster import unavailable as postgres_unavailable

LEASE_S = 3.0
PARTITION_S = float(os.environ.get("WARRENMQ_PARTITION_S", "10"))
CYCLES = int(os.environ.get("WARRENMQ_PARTITION_CYCLES", "1"))
NODES = ("n1", "n2")


def _wait(condition: Callable[[], object], timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"{what}: not within {timeout_s} s"
        time.sleep(0.05)


@dataclass
class Pair:
    lab: netns.Lab
    postgres: PostgresCluster
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

    def history(self) -> History:
        return History.read(self.out) if self.out.exists() else History()


@pytest.fixture
def pair(tmp_path: Path) -> Iterator[Pair]:
    reason = netns.unavailable() or postgres_unavailable()
    if reason is not None:
        pytest.skip(reason)
    lab = netns.Lab()
    postgres: PostgresCluster | None = None
    nodes: dict[str, NetnsNode] = {}
    pair: Pair | None = None
    try:
        address = lab.add("pg")
        for name in (*NODES, "clients"):
            lab.add(name)
        postgres = PostgresCluster.create(host=address, netns=lab.namespace("pg"))
        with open(postgres.data_dir / "pg_hba.conf", "a") as hba:
            hba.write(f"host all all {netns.SUBNET}.0/24 scram-sha-256\n")
        postgres.start()
        dsn = postgres.create_database()
        nodes = {name: NetnsNode(lab, name, dsn, tmp_path, LEASE_S) for name in NODES}
        pair = Pair(lab, postgres, nodes, tmp_path / "history.jsonl")
        yield pair
    finally:
        if pair is not None and pair.client is not None and pair.client.poll() is None:
            pair.client.kill()
        for node in nodes.values():
            node.unsupervise()
        if postgres is not None:
            postgres.destroy()
        lab.close()


def _start(pair: Pair) -> None:
    first, second = pair.nodes.values()
    first.supervise()
    _wait(lambda: pair.active() == first.name, 60, "the first node active")
    second.supervise()
    second.wait_event("standby")
    hosts = [node.host for node in pair.nodes.values()]
    args = [sys.executable, "-m", "tests.ha.partition_client", str(pair.out), *hosts]
    pair.client = subprocess.Popen(pair.lab.exec_args("clients", args), cwd=ROOT)
    _wait(lambda: len(pair.history().confirmed) >= 50, 60, "50 confirms before the first cut")


def _drain(pair: Pair) -> None:
    """Stop publishing, let the consumer have everything confirmed, then stop it."""
    pair.out.with_name(pair.out.name + ".stop-publishing").touch()

    def drained() -> bool:
        history = pair.history()
        return set(history.confirmed) <= history.delivered()

    try:
        _wait(drained, 90, "every confirmed message delivered")
    finally:
        pair.out.with_name(pair.out.name + ".stop").touch()
        assert pair.client is not None
        pair.client.wait(30)


def _cut_for(pair: Pair, kind: str, a: str, b: str) -> tuple[float, float]:
    """Cut a <-> b for PARTITION_S (the schedule's deliberate sleep), heal; (cut at, healed at)."""
    pair.lab.cut(a, b)
    cut_at = time.time()
    pair.cuts.append((kind, cut_at))
    time.sleep(PARTITION_S)
    pair.lab.heal(a, b)
    healed_at = time.time()
    pair.heals.append((kind, healed_at))
    return cut_at, healed_at


SCHEDULES: dict[str, tuple[int, Callable[[str, str], tuple[str, str]]]] = {
    # The active node loses the database but not its clients: it must step down within its lease, and the
    # standby take over, before the partition heals.
    "active-database": (11, lambda active, standby: (active, "pg")),
    # The clients lose the active node, which still reaches the database and keeps its lease: no service
    # until the partition heals (the standby cannot take a live lease), then the clients come back.
    "clients-active": (12, lambda active, standby: ("clients", active)),
    # The standby loses the database: nothing changes for the clients.
    "standby-database": (13, lambda active, standby: (standby, "pg")),
}


@pytest.mark.slow
@pytest.mark.timeout(600)
@pytest.mark.parametrize("schedule", list(SCHEDULES))
def test_partition_schedule(pair: Pair, schedule: str) -> None:
    seed, link = SCHEDULES[schedule]
    rng = random.Random(seed)
    _start(pair)
    failovers_s: list[float] = []
    recoveries_s: list[float] = []
    for _ in range(CYCLES):
        time.sleep(rng.uniform(1.0, 3.0))  # the schedule: load before the cut, its length from the seed
        active = pair.active()
        assert active is not None, "no single active node before the cut"
        standby = next(name for name in NODES if name != active)
        a, b = link(active, standby)
        cut_at, healed_at = _cut_for(pair, schedule, a, b)
        history = pair.history()
        if schedule == "active-database":
            first = history.first_confirm_sent_after(cut_at)
            assert first is not None, "no confirm after the cut"
            assert first - cut_at <= LEASE_S + 5, (
                f"failover took {first - cut_at:.2f} s, over the lease + 5 s"
            )
            failovers_s.append(first - cut_at)
        # Service after the heal: a confirm of a message sent after it.
        _wait(_served_after(pair, healed_at), 60, "a confirm after the heal")
        recovered = pair.history().first_confirm_sent_after(healed_at)
        assert recovered is not None
        recoveries_s.append(recovered - healed_at)
        # Both nodes back (the deposed one restarted by its supervisor as a standby) before the next cut.
        _wait(lambda: pair.active() is not None and all(n.running for n in pair.nodes.values()), 60, "pair")
    gap_s = _longest_gap_between_confirms(pair.history())
    _drain(pair)
    verdict = check(pair.history(), {name: node.log_path for name, node in pair.nodes.items()})
    assert verdict.problems() == []
    if schedule == "standby-database":
        assert gap_s < 2.0, f"the clients were held up {gap_s:.1f} s by the standby's partition"
    history = verdict.history
    print(
        f"\n{schedule}: {len(history.confirmed)} confirmed, 0 lost, {verdict.duplicates} duplicates "
        f"(all flagged), {len(history.lost)} unanswered, {len(verdict.spells)} active spells; "
        f"failover {_figures(failovers_s)}; recovery after heal {_figures(recoveries_s)}; "
        f"longest gap between confirms {gap_s:.2f} s"
    )


def _served_after(pair: Pair, moment: float) -> Callable[[], bool]:
    return lambda: pair.history().first_confirm_sent_after(moment) is not None


def _longest_gap_between_confirms(history: History) -> float:
    times = sorted(history.confirmed.values())
    return max((b - a for a, b in itertools.pairwise(times)), default=0.0)


def _figures(values: list[float]) -> str:
    if not values:
        return "-"
    return f"median {statistics.median(values):.2f} s, worst {max(values):.2f} s"
