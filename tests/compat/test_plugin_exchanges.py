"""Differential tests for the plugin exchange types against RabbitMQ with the plugins enabled
(``rabbitmq_plugins_url``), plus an oracle-only check of 3.10's header hashing with WarrenMQ's phash2."""

from __future__ import annotations

import pika
import pytest

from broker.core.exchanges.erlang_hash import Atom, phash2
from broker.core.exchanges.jump_hash import jump_consistent_hash

from .scenarios import Ctx
from .scenarios_plugins import PLUGIN_SCENARIOS, placement, run_plugin_scenario

pytestmark = [pytest.mark.compat, pytest.mark.slow]


@pytest.mark.parametrize("name", sorted(PLUGIN_SCENARIOS))
def test_warrenmq_matches_rabbitmq_plugins(rabbitmq_plugins_url: str, amqp_url: str, name: str) -> None:
    expected = run_plugin_scenario(rabbitmq_plugins_url, name)
    observed = run_plugin_scenario(amqp_url, name)
    assert observed == expected


def test_rabbitmq_310_hashes_a_header_as_its_typed_pair(rabbitmq_plugins_url: str) -> None:
    """3.10 hashes a hash-header value as rabbit_misc:table_lookup returns it, {longstr, V}; 3.13 (which
    WarrenMQ follows) hashes V. The oracle can only show 3.10's: predicting it key by key with our phash2 of
    the tuple checks tuple and atom hashing through the real plugin."""
    ctx = Ctx(rabbitmq_plugins_url, "hdr310")
    try:
        ch = ctx.channel(confirm=True)
        x = ctx.exchange(ch, "chx", "x-consistent-hash", arguments={"hash-header": "h"})
        weights = (2, 1, 3, 4)
        queues = [ctx.queue(ch, f"q{n}") for n in range(len(weights))]
        for queue, weight in zip(queues, weights, strict=True):
            ch.queue_bind(queue, x, str(weight))
        values = [f"v{n}" for n in range(500)]
        for value in values:
            ch.basic_publish(x, "rk", value.encode(), pika.BasicProperties(headers={"h": value}))
        seen = placement(ch, queues)
    finally:
        ctx.close()
    buckets = [queue for queue, weight in zip(queues, weights, strict=True) for _ in range(weight)]
    predicted = {v: buckets[jump_consistent_hash(phash2((Atom("longstr"), v)), len(buckets))] for v in values}
    assert seen == predicted
