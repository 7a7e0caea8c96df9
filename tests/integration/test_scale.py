"""Scale, bounded: 20,000 connections with 2 s heartbeats held by one broker process, 100,000 queues and
300,000 bindings declared in time linear in their count (broker CPU per item at two sizes, not wall time).

The broker runs in its own process with its own descriptor table, started with a soft RLIMIT_NOFILE of 1024
that it must raise to the hard limit itself. Clients come from ``broker.bench.scale`` (raw asyncio handshakes,
as many client processes as their own descriptor limit needs, sources spread over 127.0.0.x).
"""

from __future__ import annotations

import resource
import time
from collections.abc import Iterator

import psutil
import pytest
import requests

from broker.bench.scale import scale_conns, scale_queues
from tests.conftest import BrokerProcess, start_broker_process

pytestmark = pytest.mark.slow

CONNECTIONS = 20_000
HEARTBEAT_S = 2
# Per-item cost may grow a little with size (dict resizes, the statistics sampler walking more queues per
# tick); a quadratic step would multiply it by the size ratio (10x here).
LINEAR_BOUND = 3.0


@pytest.fixture(scope="module")
def broker() -> Iterator[BrokerProcess]:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(1024, hard), hard))  # inherited by the broker
    try:
        process = start_broker_process(
            "--data-dir", "none", "--heartbeat", str(HEARTBEAT_S), "--prometheus-port", "-1"
        )
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    try:
        yield process
    finally:
        process.stop()


def _wait_for_free_descriptors(broker: BrokerProcess) -> None:
    """Until the broker has closed the clients' sockets (at its descriptor limit a new connection is accepted
    and closed at once: EMFILE), also when the connections test failed before its own wait."""
    process = psutil.Process(broker.process.pid)
    hard = process.rlimit(psutil.RLIMIT_NOFILE)[1]
    for _ in range(600):
        if process.num_fds() < hard - 100:
            return
        time.sleep(0.1)  # another process's descriptors: nothing to wait on but polling


def test_the_broker_raises_its_soft_descriptor_limit_to_the_hard_limit(broker: BrokerProcess) -> None:
    soft, hard = psutil.Process(broker.process.pid).rlimit(psutil.RLIMIT_NOFILE)
    assert soft == hard
    assert soft > 1024


# 41 s on two quiet cores; past the default 120 s when other work held both cores (20,000 handshakes, then
# heartbeats on all of them for three intervals): the bound is for a hang, not for speed. So is each
# connection's: under `make test`'s load one run took 234 s, and 437 handshakes took over 60 s each, while the
# connections already open heartbeated every second on both sides.
CONNECT_TIMEOUT_S = 180.0


@pytest.mark.timeout(600)
def test_twenty_thousand_connections_hold_with_heartbeats_flowing(broker: BrokerProcess) -> None:
    pid = broker.process.pid
    idle_fds = psutil.Process(pid).num_fds()
    hard = psutil.Process(pid).rlimit(psutil.RLIMIT_NOFILE)[1]
    # Every accepted socket is one descriptor of the broker: with a hard limit of 20,000 (this machine's)
    # and the listeners, epoll and stdio already open, the broker can hold hard - idle_fds clients.
    capacity = min(CONNECTIONS, hard - idle_fds)
    result = scale_conns(
        broker.url,
        n=CONNECTIONS,
        heartbeat_s=HEARTBEAT_S,
        hold_s=3 * HEARTBEAT_S,
        pid=pid,
        connect_timeout_s=CONNECT_TIMEOUT_S,
    )
    extra = result.extra
    assert capacity - 8 <= extra["opened"] <= capacity, extra
    # Those beyond the descriptor limit are refused by the broker; none waits forever.
    assert extra["opened"] + sum(extra["failed"].values()) == CONNECTIONS
    # Over three heartbeat intervals the broker closed none (it heard every client's heartbeats) and sent
    # heartbeats on every one.
    assert extra["ended"] == {}, extra
    assert extra["open_after_hold"] == extra["opened"]
    assert extra["heartbeats_min"] >= 1
    # The broker still serves its management API once it has closed the clients' sockets.
    _wait_for_free_descriptors(broker)
    overview = requests.get(
        f"http://127.0.0.1:{broker.management_port}/api/overview", auth=("guest", "guest"), timeout=60
    ).json()
    assert "object_totals" in overview


def test_declaring_queues_and_bindings_costs_the_same_per_item_at_ten_times_the_count(
    broker: BrokerProcess,
) -> None:
    _wait_for_free_descriptors(broker)
    result = scale_queues(
        broker.url,
        sizes=(10_000, 100_000),
        bindings=(30_000, 300_000),
        keep=True,
        pid=broker.process.pid,
    )
    queues, bindings = result.extra["queues"], result.extra["bindings"]
    assert queues[-1]["cpu_us_per_item"] < LINEAR_BOUND * queues[0]["cpu_us_per_item"], queues
    assert bindings[-1]["cpu_us_per_item"] < LINEAR_BOUND * bindings[0]["cpu_us_per_item"], bindings
    base = f"http://127.0.0.1:{broker.management_port}/api"
    overview = requests.get(f"{base}/overview", auth=("guest", "guest"), timeout=60).json()
    assert overview["object_totals"]["queues"] == 100_000
    page = requests.get(f"{base}/queues?page=1000&page_size=100", auth=("guest", "guest"), timeout=60).json()
    assert [item["name"] for item in page["items"]][-1] == "scale.q.0099999"
    assert page["total_count"] == 100_000
