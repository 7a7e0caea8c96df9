"""The HA pair on a replicated PostgreSQL: a primary and a synchronous streaming standby on hosts of their own
(tests/postgres/replication.py), the nodes given both in one multi-host DSN with
``target_session_attrs=read-write``. Under confirmed load (tests/ha/partition_client.py) the primary is killed
with SIGKILL and, after a failover manager's detection delay, its standby promoted; the pair follows the
promotion, and after draining the checker (tests/ha/checker.py) finds every confirmed message delivered
(synchronous replication put each confirmed commit on the standby before its confirm), every repeated
delivery flagged, never two nodes serving. Each cycle after the first makes the lost server a standby again.

Prints the confirmed count, duplicates and failover times (kill to the first confirm of a message sent after
it): ``WARRENMQ_PROMOTION_CYCLES=5 python -m pytest tests/ha/test_replicated_store.py -s``."""

from __future__ import annotations

import os
import random
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.ha import netns
from tests.ha.schedule import LEASE_S, NODES, Pair, drain, make_nodes, start, summary, verdict, wait
from tests.postgres.cluster import unavailable as postgres_unavailable
from tests.postgres.replication import ReplicatedPostgres

CYCLES = int(os.environ.get("WARRENMQ_PROMOTION_CYCLES", "1"))
SEED = 21


@pytest.fixture
def replicated(tmp_path: Path) -> Iterator[tuple[Pair, ReplicatedPostgres]]:
    reason = netns.unavailable() or postgres_unavailable()
    if reason is not None:
        pytest.skip(reason)
    lab = netns.Lab()
    postgres: ReplicatedPostgres | None = None
    pair: Pair | None = None
    try:
        hosts = [(lab.add(name), lab.namespace(name)) for name in ("pg1", "pg2")]
        for name in (*NODES, "clients"):
            lab.add(name)
        postgres = ReplicatedPostgres.create(hosts, netns.SUBNET)
        dsn = postgres.create_database()
        pair = Pair(lab, make_nodes(lab, dsn, tmp_path), tmp_path / "history.jsonl")
        yield pair, postgres
    finally:
        if pair is not None:
            pair.close()
        if postgres is not None:
            postgres.destroy()
        lab.close()


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_the_pair_follows_a_promotion_and_keeps_every_confirmed_message(
    replicated: tuple[Pair, ReplicatedPostgres],
) -> None:
    pair, postgres = replicated
    rng = random.Random(SEED)
    start(pair)
    failovers_s: list[float] = []
    for cycle in range(CYCLES):
        if cycle:
            postgres.rejoin()
            wait(pair.served_after(time.time()), 60, "confirms with the rejoined standby synchronous")
        time.sleep(rng.uniform(1.0, 3.0))  # load before the kill, its length from the seed
        postgres.kill_primary()
        killed_at = time.time()
        # A failover manager's detection (Patroni's loop, a managed PostgreSQL's health checks): the
        # schedule's deliberate pause, from the seed, sometimes within the lease and sometimes past it.
        pause_s = rng.uniform(0.5, 2 * LEASE_S)
        time.sleep(pause_s)
        postgres.promote()
        promoted_at = time.time()
        wait(pair.served_after(killed_at), 60, "a confirm of a message sent after the kill")
        first = pair.history().first_confirm_sent_after(killed_at)
        assert first is not None
        failovers_s.append(first - killed_at)
        # The lease rides the promotion out or is lost (the node exits, its supervisor restarts it): either
        # way service is back within the lease and an election attempt after the promotion, plus recovery.
        assert first - promoted_at <= LEASE_S + 5, f"served {first - promoted_at:.2f} s after the promotion"
        print(
            f"\ncycle {cycle + 1}: promoted {pause_s:.2f} s after the kill; served again "
            f"{first - killed_at:.2f} s after the kill, {first - promoted_at:.2f} s after the promotion"
        )
        wait(pair.settled, 60, "one node active and both running")
    drain(pair)
    result = verdict(pair)
    assert result.problems() == []
    print(summary("primary killed, standby promoted", result, failovers_s, []))
