"""kill -9 (and a clean restart) against state that used to live only in memory: the messages a
durable x-delayed-message exchange holds, and quorum queues' delivery counts with the x-delivery-limit they
enforce. Real clients, `warrenmq serve --data-dir`, the broker killed with SIGKILL between steps.

Timing: the delayed messages' due times are seconds apart from the kill and the restart; a test waits for a
message with a generous bound, and checks "not yet due" only while its due time has not passed by the clock.
"""

from __future__ import annotations

import time
from typing import Any

import pika
import pytest
from pika.adapters.blocking_connection import BlockingChannel

from tests.durability.conftest import DurableBroker

pytestmark = pytest.mark.slow

SOON_MS = 1_500  # due while the broker is down
LATE_MS = 9_000  # due after the restart
WAIT_S = 60.0  # bound for anything to arrive on a loaded machine


def _confirmed(durable: DurableBroker) -> BlockingChannel:
    channel = durable.connect().channel()
    channel.confirm_delivery()
    return channel


def _publish_delayed(channel: BlockingChannel, body: str, delay_ms: int, delivery_mode: int = 2) -> None:
    properties = pika.BasicProperties(delivery_mode=delivery_mode, headers={"x-delay": delay_ms})
    channel.basic_publish("later", "k", body.encode(), properties)  # returns once confirmed


def _collect(durable: DurableBroker, queue: str, expected: int) -> list[str]:
    """basic.get with no_ack until ``expected`` came (or the bound passed), then whatever else is ready; a
    confirmed publish last, so the removals are committed before the caller kills the broker (a no_ack
    delivery whose removal is not yet on disk may come back: at least once)."""
    channel = durable.connect().channel()
    got: list[str] = []
    deadline = time.monotonic() + WAIT_S
    while len(got) < expected and time.monotonic() < deadline:
        method, _, body = channel.basic_get(queue, auto_ack=True)
        if method is None:
            time.sleep(0.05)
            continue
        got.append(body.decode())
    while (message := channel.basic_get(queue, auto_ack=True))[0] is not None:
        got.append(message[2].decode())  # anything more would be a duplicate
    channel.confirm_delivery()
    channel.queue_declare("sentinel", durable=True)
    _commit_point(channel)
    channel.connection.close()
    return got


def test_delayed_messages_survive_sigkill_those_due_in_the_outage_go_at_start(durable: DurableBroker) -> None:
    channel = _confirmed(durable)
    channel.exchange_declare(
        "later", "x-delayed-message", durable=True, arguments={"x-delayed-type": "direct"}
    )
    channel.queue_declare("due", durable=True)
    channel.queue_bind("due", "later", "k")
    published_at = time.monotonic()
    for index in range(5):
        _publish_delayed(channel, f"soon-{index}", SOON_MS)
        _publish_delayed(channel, f"late-{index}", LATE_MS)
    # The plugin keeps every held delivery, whatever its delivery_mode (a Mnesia disc table).
    _publish_delayed(channel, "soon-transient", SOON_MS, delivery_mode=1)

    durable.kill()
    # Down until the soon ones are due: that time must pass on the clock while no broker runs to poll.
    time.sleep(max(0.0, published_at + SOON_MS / 1000 + 0.5 - time.monotonic()))
    durable.start()
    assert durable.recovered["delayed"] == 11

    soon = _collect(durable, "due", 6)
    if time.monotonic() < published_at + LATE_MS / 1000:
        assert sorted(soon) == sorted([f"soon-{index}" for index in range(5)] + ["soon-transient"])
    # A second crash before the late ones are due: still held, none lost, none twice.
    durable.kill()
    durable.start()
    everything = soon + _collect(durable, "due", 11 - len(soon))
    assert sorted(everything) == sorted(
        [f"soon-{index}" for index in range(5)] + ["soon-transient"] + [f"late-{index}" for index in range(5)]
    )
    durable.stop()
    durable.start()
    assert durable.recovered["delayed"] == 0  # routed ones left the store with the routing's commit


def test_deleting_a_delayed_exchange_drops_its_held_messages_across_a_crash(durable: DurableBroker) -> None:
    channel = _confirmed(durable)
    channel.exchange_declare(
        "later", "x-delayed-message", durable=True, arguments={"x-delayed-type": "direct"}
    )
    channel.queue_declare("due", durable=True)
    channel.queue_bind("due", "later", "k")
    _publish_delayed(channel, "gone", SOON_MS)
    channel.exchange_delete("later")
    channel.queue_declare("sentinel", durable=True)
    channel.basic_publish("", "sentinel", b"s", pika.BasicProperties(delivery_mode=2))  # commits the delete
    durable.kill()
    durable.start()
    assert durable.recovered["delayed"] == 0


def _quorum(channel: BlockingChannel, limit: int) -> None:
    channel.exchange_declare("dlx", "fanout", durable=True)
    channel.queue_declare("dead", durable=True)
    channel.queue_bind("dead", "dlx")
    arguments: dict[str, Any] = {
        "x-queue-type": "quorum",
        "x-delivery-limit": limit,
        "x-dead-letter-exchange": "dlx",
    }
    channel.queue_declare("qq", durable=True, arguments=arguments)
    channel.queue_declare("sentinel", durable=True)


def _get(channel: BlockingChannel, queue: str) -> tuple[int, bool, Any, str]:
    """(delivery tag, redelivered, x-delivery-count, body) of one basic.get with a manual ack to come."""
    deadline = time.monotonic() + WAIT_S
    while (message := channel.basic_get(queue))[0] is None:
        assert time.monotonic() < deadline, f"nothing in {queue}"
        time.sleep(0.05)
    method, properties, body = message
    count = (properties.headers or {}).get("x-delivery-count")
    return method.delivery_tag, method.redelivered, count, body.decode()


def _commit_point(channel: BlockingChannel) -> None:
    """A confirmed publish: batches commit in order, so every write the broker made before it is durable."""
    channel.basic_publish("", "sentinel", b"s", pika.BasicProperties(delivery_mode=2))


@pytest.mark.parametrize("crash", [True, False], ids=["sigkill", "sigterm"])
def test_quorum_delivery_counts_survive_and_the_delivery_limit_keeps_counting(
    durable: DurableBroker, crash: bool
) -> None:
    publisher = _confirmed(durable)
    _quorum(publisher, limit=3)
    publisher.basic_publish("", "qq", b"poison", pika.BasicProperties(delivery_mode=2))
    consumer = durable.connect().channel()
    for expected_count in (0, 1):
        tag, _, count, _ = _get(consumer, "qq")
        assert count == expected_count
        consumer.basic_nack(tag, requeue=True)
    _commit_point(publisher)

    durable.restart(crash=crash)

    consumer = durable.connect().channel()
    tag, redelivered, count, body = _get(consumer, "qq")
    assert (body, redelivered, count) == ("poison", True, 2)
    consumer.basic_nack(tag, requeue=True)
    tag, _, count, _ = _get(consumer, "qq")
    assert count == 3
    consumer.basic_nack(tag, requeue=True)  # a 4th return is past x-delivery-limit 3: dead-lettered
    assert [body for _, _, _, body in [_get(consumer, "dead")]] == ["poison"]
    assert consumer.basic_get("qq")[0] is None


@pytest.mark.parametrize("crash", [True, False], ids=["sigkill", "sigterm"])
def test_a_quorum_message_checked_out_at_a_stop_counts_a_return(durable: DurableBroker, crash: bool) -> None:
    """RabbitMQ 3.10.8 (checked): a message unacked when the node stops (either way) comes back with
    x-delivery-count one higher; past the limit it is dead-lettered at start."""
    publisher = _confirmed(durable)
    _quorum(publisher, limit=1)
    publisher.basic_publish("", "qq", b"poison", pika.BasicProperties(delivery_mode=2))
    publisher.basic_publish("", "qq", b"counted", pika.BasicProperties(delivery_mode=2))
    consumer = durable.connect().channel()
    tag, _, _, body = _get(consumer, "qq")
    assert body == "poison"
    consumer.basic_nack(tag, requeue=True)  # one return: at the limit
    assert _get(consumer, "qq")[3] == "poison"  # checked out again when the broker goes
    assert _get(consumer, "qq")[3] == "counted"  # checked out for the first time
    _commit_point(publisher)

    durable.restart(crash=crash)

    consumer = durable.connect().channel()
    assert _get(consumer, "dead")[3] == "poison"  # 2 returns > 1
    _, redelivered, count, body = _get(consumer, "qq")
    assert (body, redelivered, count) == ("counted", True, 1)
