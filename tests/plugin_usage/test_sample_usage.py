"""How an application's test suite uses WarrenMQ's pytest plugin: no broker to start, no sleeps.

Written exactly as a user would write it: only the plugin's fixtures (`warrenmq_url`, `warrenmq_vhost`) and
ordinary clients (pika, aio-pika). Every test gets its own vhost, so the same queue names never collide, also
under `pytest -n 2` (tests/integration/test_plugin_xdist.py runs this module that way).
"""

from __future__ import annotations

import aio_pika
import pika
import pytest

from broker.core.model.names import NameGenerator
from broker.testing import VhostHandle


def _channel(url: str) -> tuple[pika.BlockingConnection, pika.adapters.blocking_connection.BlockingChannel]:
    connection = pika.BlockingConnection(pika.URLParameters(url))
    return connection, connection.channel()


def test_published_messages_are_counted_after_settle(warrenmq_url: str, warrenmq_vhost: VhostHandle) -> None:
    connection, channel = _channel(warrenmq_url)
    channel.queue_declare("orders")
    for number in range(5000):
        channel.basic_publish("", "orders", f"order {number}".encode())
    # basic_publish returns before the broker has read the frames; settle() is the barrier.
    warrenmq_vhost.settle()
    assert warrenmq_vhost.queue("orders").messages_ready == 5000
    connection.close()


def test_each_test_starts_with_an_empty_vhost(warrenmq_url: str, warrenmq_vhost: VhostHandle) -> None:
    connection, channel = _channel(warrenmq_url)
    assert warrenmq_vhost.queues() == []
    channel.queue_declare("orders")  # the same name as the other tests: no collision
    channel.basic_publish("", "orders", b"x")
    warrenmq_vhost.settle()
    assert [(q.name, q.messages) for q in warrenmq_vhost.queues()] == [("orders", 1)]
    connection.close()


def test_routing_keys_are_honoured(warrenmq_url: str, warrenmq_vhost: VhostHandle) -> None:
    connection, channel = _channel(warrenmq_url)
    channel.exchange_declare("events", "topic")
    channel.queue_declare("eu")
    channel.queue_bind("eu", "events", "order.eu.#")
    warrenmq_vhost.wait_until_bound("events", "eu", "order.eu.#")
    for key in ("order.eu.fr", "order.us.ny", "order.eu"):
        channel.basic_publish("events", key, key.encode())
    warrenmq_vhost.settle()
    routed = [record.routing_key for record in warrenmq_vhost.history(queue="eu")]
    assert routed == ["order.eu.fr", "order.eu"]
    unroutable = [r.routing_key for r in warrenmq_vhost.history(exchange="events") if not r.queues]
    assert unroutable == ["order.us.ny"]
    connection.close()


async def test_worker_acks_are_awaited_without_sleeping(
    warrenmq_url: str, warrenmq_vhost: VhostHandle
) -> None:
    connection = await aio_pika.connect(warrenmq_url)
    channel = await connection.channel()
    queue = await channel.declare_queue("jobs")

    async def worker(message: aio_pika.abc.AbstractIncomingMessage) -> None:
        await message.ack()

    await queue.consume(worker)
    await warrenmq_vhost.aio.wait_for_consumers("jobs", 1)
    for number in range(5):
        await channel.default_exchange.publish(aio_pika.Message(str(number).encode()), routing_key="jobs")
    await warrenmq_vhost.aio.wait_until_acked("jobs", count=5)
    assert warrenmq_vhost.queue("jobs").messages == 0
    assert [record.fate("jobs") for record in warrenmq_vhost.history(queue="jobs")] == ["acked"] * 5
    await connection.close()


def test_message_fates_record_nacks_requeues_and_rejects(
    warrenmq_url: str, warrenmq_vhost: VhostHandle
) -> None:
    connection, channel = _channel(warrenmq_url)
    channel.queue_declare("work")
    for body in (b"ok", b"retry", b"poison"):
        channel.basic_publish("", "work", body)
    ok = channel.basic_get("work")[0]
    retry = channel.basic_get("work")[0]
    poison = channel.basic_get("work")[0]
    assert ok is not None
    assert retry is not None
    assert poison is not None
    channel.basic_ack(ok.delivery_tag)
    channel.basic_nack(retry.delivery_tag, requeue=True)
    channel.basic_reject(poison.delivery_tag, requeue=False)
    warrenmq_vhost.settle()
    fates = {record.body: record.fates("work") for record in warrenmq_vhost.history(queue="work")}
    assert fates == {
        b"ok": ["delivered", "acked"],
        b"retry": ["delivered", "nacked", "requeued"],
        b"poison": ["delivered", "nacked", "dropped"],
    }
    assert warrenmq_vhost.queue("work").messages_ready == 1
    connection.close()


def test_client_survives_a_forced_close(warrenmq_url: str, warrenmq_vhost: VhostHandle) -> None:
    connection, _ = _channel(warrenmq_url)
    assert warrenmq_vhost.close_connections() == 1
    with pytest.raises(pika.exceptions.ConnectionClosedByBroker) as closed:
        connection.process_data_events(time_limit=5)
    assert (closed.value.reply_code, closed.value.reply_text) == (
        320,
        "CONNECTION_FORCED - Closed via management plugin",
    )
    # The "application" reconnects.
    connection, channel = _channel(warrenmq_url)
    assert channel.is_open
    connection.close()


def test_publisher_handles_a_nacked_confirm(warrenmq_url: str, warrenmq_vhost: VhostHandle) -> None:
    connection, channel = _channel(warrenmq_url)
    channel.confirm_delivery()
    channel.queue_declare("audit")
    warrenmq_vhost.nack_next_confirms(1)
    with pytest.raises(pika.exceptions.NackError):
        channel.basic_publish("", "audit", b"first")
    channel.basic_publish("", "audit", b"second")  # confirmed normally again
    connection.close()


def test_server_named_queues_are_reproducible_with_a_name_seed(
    warrenmq_url: str, warrenmq_vhost: VhostHandle, pytestconfig: pytest.Config
) -> None:
    seed = pytestconfig.getini("warrenmq_name_seed")
    connection, channel = _channel(warrenmq_url)
    name = channel.queue_declare("", exclusive=True).method.queue
    assert name.startswith("amq.gen-")
    if seed:
        # The sequence restarts for every test, whichever tests ran before it or on which worker.
        assert name == NameGenerator(int(seed)).queue_name()
    connection.close()
