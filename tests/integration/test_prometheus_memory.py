"""/metrics/memory-breakdown: rabbitmq_prometheus 4.1's registry, served with a 4.1+ profile from the node's
measured memory breakdown; the 3.13 profile answers as RabbitMQ 3.13 does (404 "Unknown Registry")."""

from __future__ import annotations

from collections.abc import Iterator

import pika
import pytest
import requests
from prometheus_client.parser import text_string_to_metric_families

from broker.management.metrics.memory_breakdown import MEMORY_BREAKDOWN
from tests.conftest import BrokerProcess, start_broker_process


@pytest.fixture(scope="module")
def broker_4_3() -> Iterator[BrokerProcess]:
    broker = start_broker_process("--profile", "rabbitmq-4.3", "--prometheus-port", "0")
    try:
        yield broker
    finally:
        broker.stop()


def _scrape(broker: BrokerProcess) -> dict[str, float]:
    answer = requests.get(
        f"http://127.0.0.1:{broker.ready['prometheus_port']}/metrics/memory-breakdown", timeout=10
    )
    assert answer.status_code == 200
    return {
        sample.name: sample.value
        for family in text_string_to_metric_families(answer.text)
        for sample in family.samples
        if sample.name.startswith("rabbitmq_memory_")
    }


def test_memory_breakdown_families_follow_the_queued_bodies(broker_4_3: BrokerProcess) -> None:
    before = _scrape(broker_4_3)
    assert set(before) == {f"rabbitmq_{name}" for name, _, _ in MEMORY_BREAKDOWN}
    connection = pika.BlockingConnection(pika.URLParameters(broker_4_3.url))
    try:
        channel = connection.channel()
        channel.queue_declare("breakdown", durable=True)  # 4.3 denies transient non-exclusive queues
        for _ in range(300):
            channel.basic_publish("", "breakdown", b"b" * 5000)
        channel.queue_declare("breakdown", passive=True)
        after = _scrape(broker_4_3)
        channel.queue_delete("breakdown")
    finally:
        connection.close()
    grown = after["rabbitmq_memory_binary_heap_bytes"] - before["rabbitmq_memory_binary_heap_bytes"]
    assert 300 * 5000 <= grown <= 300 * 5100
    assert after["rabbitmq_memory_code_module_bytes"] > 0


def test_memory_breakdown_is_an_unknown_registry_with_the_3_13_profile() -> None:
    broker = start_broker_process("--prometheus-port", "0")
    try:
        answer = requests.get(
            f"http://127.0.0.1:{broker.ready['prometheus_port']}/metrics/memory-breakdown", timeout=10
        )
    finally:
        broker.stop()
    assert (answer.status_code, answer.text) == (404, "Unknown Registry")
