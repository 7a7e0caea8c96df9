"""The HA pair on a slow and lossy link to its database: every chunk between the nodes and PostgreSQL held
200 ms either way (a round trip of 400 ms), and 5 % of them 200-300 ms more, as a retransmission after a lost
segment (tests/ha/slow_link.py, a proxy in the database's namespace: this kernel has no netem). The link
degrades under confirmed load (tests/ha/partition_client.py) for LINK_S and is then restored, as a partition
is cut and healed: the active node must keep its lease throughout (its renewals do not queue behind its own
commits, and nothing it opens gives up on a slow but live link), service must go on, and the checker
(tests/ha/checker.py) must find nothing confirmed lost, every repeat flagged, never two nodes serving.

The pair starts on the fast link: over this one a node's start and recovery take about 15 s of round trips,
longer than the default lease (docs/high-availability.md).

``WARRENMQ_SLOW_LINK_S=120 python -m pytest tests/ha/test_slow_link.py -s`` for a longer run."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.ha import netns
from tests.ha.nodes import ROOT
from tests.ha.schedule import Pair, drain, hosts_with_postgres, make_nodes, start, summary, verdict, wait
from tests.postgres.cluster import PostgresCluster
from tests.postgres.cluster import unavailable as postgres_unavailable

LINK_S = float(os.environ.get("WARRENMQ_SLOW_LINK_S", "20"))
PROXY_PORT = 6543  # in the database's own namespace: nothing else listens there
SEED = 31


@pytest.fixture
def slow_pair(tmp_path: Path) -> Iterator[tuple[Pair, subprocess.Popen[str]]]:
    reason = netns.unavailable() or postgres_unavailable()
    if reason is not None:
        pytest.skip(reason)
    lab = netns.Lab()
    postgres: PostgresCluster | None = None
    proxy: subprocess.Popen[str] | None = None
    pair: Pair | None = None
    try:
        address, postgres = hosts_with_postgres(lab)
        direct = postgres.create_database()
        args = [sys.executable, "-m", "tests.ha.slow_link", f"{address}:{PROXY_PORT}"]
        args += [f"{address}:{postgres.port}", "--seed", str(SEED), "--start-fast"]
        proxy = subprocess.Popen(lab.exec_args("pg", args), cwd=ROOT, stdout=subprocess.PIPE, text=True)
        assert proxy.stdout is not None
        assert proxy.stdout.readline().strip() == "listening"
        dsn = direct.replace(f"@{address}:{postgres.port}/", f"@{address}:{PROXY_PORT}/")
        pair = Pair(lab, make_nodes(lab, dsn, tmp_path), tmp_path / "history.jsonl")
        yield pair, proxy
    finally:
        if pair is not None:
            pair.close()
        if proxy is not None:
            proxy.terminate()
            print(proxy.communicate(timeout=30)[0].strip())
        if postgres is not None:
            postgres.destroy()
        lab.close()


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_the_active_node_keeps_its_lease_over_a_slow_lossy_link(
    slow_pair: tuple[Pair, subprocess.Popen[str]],
) -> None:
    pair, proxy = slow_pair
    start(pair)
    active = pair.active()
    assert active is not None
    proxy.send_signal(signal.SIGUSR1)  # the link degrades
    slowed_at = time.time()
    time.sleep(LINK_S)  # the schedule: confirmed load over the slow link for LINK_S
    proxy.send_signal(signal.SIGUSR2)  # and is restored
    restored_at = time.time()
    history = pair.history()
    over_slow_link = [t for t in history.confirmed.values() if slowed_at < t < restored_at]
    assert over_slow_link, "no confirm over the slow link"
    assert pair.active() == active, "the active node lost its lease on a slow but live link"
    wait(pair.served_after(restored_at), 60, "a confirm after the link was restored")
    recovered = pair.history().first_confirm_sent_after(restored_at)
    assert recovered is not None
    drain(pair)
    result = verdict(pair)
    assert result.problems() == []
    assert len(result.spells) == 1, f"a failover on a slow link: {result.spells}"
    print(summary("slow lossy link to the database", result, [], [recovered - restored_at]))
    print(f"{len(over_slow_link)} confirmed in {LINK_S:.0f} s over the slow link")
