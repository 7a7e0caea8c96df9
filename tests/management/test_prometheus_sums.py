"""The aggregated /metrics sums queue families directly; the sums equal what aggregating the per-object rows
gives (the per-object path is the reference, compared with RabbitMQ in tests/compat)."""

from __future__ import annotations

import asyncio
import math
from collections import defaultdict
from collections.abc import AsyncIterator

import pytest

from broker.config import ServerConfig
from broker.core.model.message import Message
from broker.management.context import ManagementContext
from broker.management.metrics import prometheus_collect as collect
from broker.node import build_node


@pytest.fixture
async def context() -> AsyncIterator[ManagementContext]:
    server = build_node(
        ServerConfig(host="127.0.0.1", port=0, management_port=None), asyncio.get_running_loop()
    )
    await server.start()
    try:
        yield ManagementContext(server, node="warrenmq@testhost")
    finally:
        await server.stop(grace_s=0.1)


def _sums(context: ManagementContext, direct: bool) -> dict[str, list[tuple[dict[str, str], float]]]:
    samples: collect.Samples = defaultdict(list)
    if direct:
        collect.queue_sums(context, samples)
    else:
        collect.queue_samples(context, samples)
    return collect.aggregate(samples)


async def test_direct_queue_sums_equal_the_aggregated_per_queue_rows(context: ManagementContext) -> None:
    assert _sums(context, direct=True) == {}  # no queue, no rows: as aggregating nothing
    for vhost_name in ("/", "other"):
        if vhost_name not in context.broker.vhosts:
            context.broker.add_vhost(vhost_name)
        vhost = context.broker.vhosts[vhost_name]
        for index in range(5):
            vhost.declare_queue(f"q{index}", owner=None)
            for size in range(index):
                vhost.publish("", Message("", f"q{index}", b"x" * size, b""))
    direct, reference = _sums(context, direct=True), _sums(context, direct=False)
    assert direct.keys() == reference.keys()
    for name, rows in reference.items():
        [(labels, value)] = rows
        [(direct_labels, direct_value)] = direct[name]
        assert direct_labels == labels
        assert direct_value == value or (math.isnan(direct_value) and math.isnan(value)), name
    assert reference["queue_messages_ready"][0][1] == 2 * sum(range(5))
