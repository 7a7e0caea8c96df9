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

import os
import random
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.ha import netns
from tests.ha.schedule import (
    LEASE_S,
    Pair,
    drain,
    hosts_with_postgres,
    longest_gap_between_confirms,
    make_nodes,
    start,
    summary,
    verdict,
    wait,
)
from tests.postgres.cluster import PostgresCluster
from tests.postgres.cluster import unavailable as postgres_unavailable

PARTITION_S = float(os.environ.get("WARRENMQ_PARTITION_S", "10"))
CYCLES = int(os.environ.get("WARRENMQ_PARTITION_CYCLES", "1"))


@pytest.fixture
def pair(tmp_path: Path) -> Iterator[Pair]:
    reason = netns.unavailable() or postgres_unavailable()
    if reason is not None:
        pytest.skip(reason)
    lab = netns.Lab()
    postgres: PostgresCluster | None = None
    pair: Pair | None = None
    try:
        _, postgres = hosts_with_postgres(lab)
        dsn = postgres.create_database()
        pair = Pair(lab, make_nodes(lab, dsn, tmp_path), tmp_path / "history.jsonl")
        yield pair
    finally:
        if pair is not None:
            pair.close()
        if postgres is not None:
            postgres.destroy()
        lab.close()


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
    start(pair)
    failovers_s: list[float] = []
    recoveries_s: list[float] = []
    for _ in range(CYCLES):
        time.sleep(rng.uniform(1.0, 3.0))  # the schedule: load before the cut, its length from the seed
        active = pair.active()
        assert active is not None, "no single active node before the cut"
        a, b = link(active, pair.standby_of(active))
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
        wait(pair.served_after(healed_at), 60, "a confirm after the heal")
        recovered = pair.history().first_confirm_sent_after(healed_at)
        assert recovered is not None
        recoveries_s.append(recovered - healed_at)
        # Both nodes back (the deposed one restarted by its supervisor as a standby) before the next cut.
        wait(pair.settled, 60, "one node active and both running")
    gap_s = longest_gap_between_confirms(pair.history())
    drain(pair)
    result = verdict(pair)
    assert result.problems() == []
    if schedule == "standby-database":
        assert gap_s < 2.0, f"the clients were held up {gap_s:.1f} s by the standby's partition"
    print(summary(schedule, result, failovers_s, recoveries_s))
