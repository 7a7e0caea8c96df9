"""The statistics sampler at scale: a pass over many queues runs in slices, one per event-loop turn, so that
AMQP connections are served between slices; direct totals (overview, vhost) do not walk every object."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from broker.config import ServerConfig
from broker.core.model.clock import ManualClock
from broker.management.context import ManagementContext
from broker.management.stats.stats_sampler import CHUNK, StatsSampler
from broker.node import build_node

T0_MS = 1_700_000_000_000
QUEUES = 3 * CHUNK + 10


@pytest.fixture
async def sampler() -> AsyncIterator[tuple[StatsSampler, ManualClock]]:
    clock = ManualClock(start_ms=T0_MS)
    config = ServerConfig(host="127.0.0.1", port=0, management_port=None)
    server = build_node(config, asyncio.get_running_loop(), clock=clock)
    await server.start()
    vhost = server.broker.vhosts["/"]
    for index in range(QUEUES):
        vhost.declare_queue(f"q{index}", owner=None)
    context = ManagementContext(server, node="warrenmq@testhost")
    context.sampler.start()
    try:
        yield context.sampler, clock
    finally:
        context.sampler.stop()
        await server.stop(grace_s=0.1)


def _sampled_at(sampler: StatsSampler, now_ms: int) -> int:
    """How many queues have a sample taken at ``now_ms``."""
    return sum(
        1
        for key, (_, series) in sampler.series.items()
        if key[0] == "queue" and series.samples and series.samples[-1][0] == now_ms
    )


async def test_a_pass_over_many_queues_yields_to_the_loop_between_slices(
    sampler: tuple[StatsSampler, ManualClock],
) -> None:
    stats, clock = sampler
    assert _sampled_at(stats, T0_MS) == QUEUES  # start() samples everything at once
    clock.advance(stats.interval_s)
    now_ms = clock.now_ms()
    # The timer's callback recorded one slice and handed the rest to later loop turns.
    assert _sampled_at(stats, now_ms) < CHUNK
    turns = 0
    while _sampled_at(stats, now_ms) < QUEUES:
        await asyncio.sleep(0)
        turns += 1
        assert turns < 100
    assert turns >= 3  # QUEUES / CHUNK slices after the first


async def test_queues_deleted_during_a_pass_lose_their_series_by_the_next_pass(
    sampler: tuple[StatsSampler, ManualClock],
) -> None:
    stats, clock = sampler
    vhost = stats.server.broker.vhosts["/"]
    clock.advance(stats.interval_s)
    for index in range(QUEUES - 5, QUEUES):
        vhost.delete_queue(f"q{index}", owner=None)
    clock.advance(stats.interval_s)  # the next tick finishes the running pass first, then starts anew

    def queues() -> set[str]:
        return {key[2] for key in stats.series if key[0] == "queue"}

    for _ in range(100):  # the pass ends within QUEUES / CHUNK loop turns; then unseen series go
        if f"q{QUEUES - 1}" not in queues():
            break
        await asyncio.sleep(0)
    assert len(queues()) == QUEUES - 5
    assert f"q{QUEUES - 1}" not in queues()


async def test_overview_and_vhost_totals_count_every_queue(
    sampler: tuple[StatsSampler, ManualClock],
) -> None:
    stats, _ = sampler
    overview = stats.current(("overview",))
    vhost = stats.current(("vhost", "/"))
    assert overview is not None
    assert vhost is not None
    assert overview[0] is stats.server.broker
    assert vhost[0] is stats.server.broker.vhosts["/"]
    assert stats.current(("vhost", "no-such-vhost")) is None
    churn = stats.current(("churn",))
    assert churn is not None
    counts = dict(zip(churn[1], churn[2], strict=True))
    assert counts["queue_created"] == QUEUES


async def test_a_second_start_adds_no_timer_that_stop_would_leave_running(
    sampler: tuple[StatsSampler, ManualClock],
) -> None:
    # The management listener starts the sampler at boot and its application, built at the first request
    # (broker.management.lazy_http), starts it again; after stop() nothing may sample any more.
    stats, clock = sampler
    stats.start()
    stats.stop()
    clock.advance(stats.interval_s * 2)
    for _ in range(QUEUES):
        await asyncio.sleep(0)
    assert _sampled_at(stats, clock.now_ms()) == 0
