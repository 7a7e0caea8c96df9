"""basic.ack / nack / reject / recover: multiple, requeue position and redelivered flag, delivery-tag errors,
and requeueing of unacked messages when a channel or connection goes away."""

from __future__ import annotations

from typing import Any

import pika
import pika.exceptions
import pytest

from .conftest import ConnectFactory
from .helpers import Collector, drain_redelivered, prepared, pump, ready


def get_tags(ch: Any, queue: str, count: int) -> list[int]:
    tags = []
    for _ in range(count):
        method, _props, _body = ch.basic_get(queue)
        assert method is not None
        tags.append(method.delivery_tag)
    return tags


def test_ack_removes_the_message(connection: pika.BlockingConnection) -> None:
    ch, queue = prepared(connection, 2)
    tags = get_tags(ch, queue, 2)
    ch.basic_ack(tags[0])
    ch.close()  # the unacked second one comes back
    ch = connection.channel()
    assert drain_redelivered(ch, queue) == [(b"m1", True)]


def test_ack_multiple_acks_everything_up_to_the_tag(connection: pika.BlockingConnection) -> None:
    ch, queue = prepared(connection, 5)
    tags = get_tags(ch, queue, 5)
    assert tags == [1, 2, 3, 4, 5]
    ch.basic_ack(3, multiple=True)
    ch.close()
    ch = connection.channel()
    assert drain_redelivered(ch, queue) == [(b"m3", True), (b"m4", True)]


def test_ack_zero_with_multiple_acks_all_outstanding(connection: pika.BlockingConnection) -> None:
    ch, queue = prepared(connection, 3)
    get_tags(ch, queue, 3)
    ch.basic_ack(0, multiple=True)
    ch.close()
    ch = connection.channel()
    assert drain_redelivered(ch, queue) == []


def test_nack_requeue_puts_the_message_back_at_its_position(connection: pika.BlockingConnection) -> None:
    ch, queue = prepared(connection, 5)
    tags = get_tags(ch, queue, 2)
    # Requeue the second before the first: the queue still ends up in publish order.
    ch.basic_nack(tags[1], requeue=True)
    ch.basic_nack(tags[0], requeue=True)
    assert drain_redelivered(ch, queue) == [
        (b"m0", True),
        (b"m1", True),
        (b"m2", False),
        (b"m3", False),
        (b"m4", False),
    ]


def test_reject_requeue_keeps_position_and_sets_redelivered(connection: pika.BlockingConnection) -> None:
    ch, queue = prepared(connection, 3)
    method, _props, body = ch.basic_get(queue)
    assert method is not None
    assert body == b"m0"
    ch.basic_reject(method.delivery_tag, requeue=True)
    method, _props, body = ch.basic_get(queue)
    assert method is not None
    assert (body, method.redelivered, method.message_count) == (b"m0", True, 2)
    ch.basic_ack(method.delivery_tag)


def test_nack_multiple_requeue(connection: pika.BlockingConnection) -> None:
    ch, queue = prepared(connection, 4)
    get_tags(ch, queue, 3)
    ch.basic_nack(2, multiple=True, requeue=True)  # m0, m1 back; m2 still unacked
    assert drain_redelivered(ch, queue) == [(b"m0", True), (b"m1", True), (b"m3", False)]


def test_nack_and_reject_without_requeue_drop(connection: pika.BlockingConnection) -> None:
    ch, queue = prepared(connection, 4)
    tags = get_tags(ch, queue, 4)
    ch.basic_reject(tags[0], requeue=False)
    ch.basic_nack(tags[2], multiple=True, requeue=False)  # m1, m2
    ch.basic_nack(tags[3], requeue=False)
    assert ready(ch, queue) == 0
    ch.close()
    assert drain_redelivered(connection.channel(), queue) == []


def test_requeued_message_goes_back_to_a_consumer_redelivered(connection: pika.BlockingConnection) -> None:
    ch, queue = prepared(connection, 1)
    seen = Collector()
    ch.basic_consume(queue, seen)
    pump(connection, lambda: len(seen) == 1, what="first delivery")
    ch.basic_nack(seen.deliveries[0].delivery_tag, requeue=True)
    pump(connection, lambda: len(seen) == 2, what="redelivery")
    assert [(d.body, d.redelivered) for d in seen.deliveries] == [(b"m0", False), (b"m0", True)]
    assert seen.deliveries[1].delivery_tag == 2  # delivery tags keep increasing on the channel


@pytest.mark.parametrize(
    ("call", "kwargs"),
    [
        ("basic_ack", {}),
        ("basic_ack", {"multiple": True}),
        ("basic_nack", {}),
        ("basic_nack", {"multiple": True}),
        ("basic_reject", {}),
    ],
    ids=["ack", "ack-multiple", "nack", "nack-multiple", "reject"],
)
def test_unknown_delivery_tag_is_406(
    connection: pika.BlockingConnection, call: str, kwargs: dict[str, Any]
) -> None:
    ch = connection.channel()
    getattr(ch, call)(99, **kwargs)
    with pytest.raises(pika.exceptions.ChannelClosedByBroker) as excinfo:
        ch.queue_declare("", exclusive=True)  # any synchronous call surfaces the asynchronous channel.close
    assert excinfo.value.args == (406, "PRECONDITION_FAILED - unknown delivery tag 99")
    assert connection.is_open


def test_ack_zero_without_multiple_is_406(connection: pika.BlockingConnection) -> None:
    ch = connection.channel()
    ch.basic_ack(0)
    with pytest.raises(pika.exceptions.ChannelClosedByBroker) as excinfo:
        ch.queue_declare("", exclusive=True)
    assert excinfo.value.args == (406, "PRECONDITION_FAILED - unknown delivery tag 0")


def test_double_ack_is_406(connection: pika.BlockingConnection) -> None:
    ch, queue = prepared(connection, 1)
    [tag] = get_tags(ch, queue, 1)
    ch.basic_ack(tag)
    ch.basic_ack(tag)
    with pytest.raises(pika.exceptions.ChannelClosedByBroker) as excinfo:
        ch.queue_declare("", exclusive=True)
    assert excinfo.value.args == (406, f"PRECONDITION_FAILED - unknown delivery tag {tag}")


def test_ack_of_an_auto_acked_delivery_is_406(connection: pika.BlockingConnection) -> None:
    ch, queue = prepared(connection, 1)
    method, _props, _body = ch.basic_get(queue, auto_ack=True)
    assert method is not None
    ch.basic_ack(method.delivery_tag)
    with pytest.raises(pika.exceptions.ChannelClosedByBroker) as excinfo:
        ch.queue_declare("", exclusive=True)
    assert excinfo.value.args == (406, f"PRECONDITION_FAILED - unknown delivery tag {method.delivery_tag}")


def test_delivery_tags_are_per_channel(connection: pika.BlockingConnection) -> None:
    ch, queue = prepared(connection, 1)
    [tag] = get_tags(ch, queue, 1)
    other = connection.channel()
    other.basic_ack(tag)
    with pytest.raises(pika.exceptions.ChannelClosedByBroker) as excinfo:
        other.queue_declare("", exclusive=True)
    assert excinfo.value.args == (406, f"PRECONDITION_FAILED - unknown delivery tag {tag}")
    ch.basic_ack(tag)  # still valid on the channel that received it
    assert ready(ch, queue) == 0


def test_channel_error_requeues_its_unacked_messages(connection: pika.BlockingConnection) -> None:
    ch, queue = prepared(connection, 3)
    get_tags(ch, queue, 3)
    ch.basic_ack(99)  # provoke a 406 channel close
    with pytest.raises(pika.exceptions.ChannelClosedByBroker):
        ch.queue_declare("", exclusive=True)
    other = connection.channel()
    assert drain_redelivered(other, queue) == [(b"m0", True), (b"m1", True), (b"m2", True)]


def test_recover_requeue_redelivers_unacked_consumer_messages(connection: pika.BlockingConnection) -> None:
    ch, queue = prepared(connection, 3)
    seen = Collector()
    ch.basic_consume(queue, seen)
    pump(connection, lambda: len(seen) == 3, what="3 deliveries")
    ch.basic_recover(requeue=True)
    pump(connection, lambda: len(seen) == 6, what="3 redeliveries")
    assert [(d.body, d.redelivered) for d in seen.deliveries] == [
        (b"m0", False),
        (b"m1", False),
        (b"m2", False),
        (b"m0", True),
        (b"m1", True),
        (b"m2", True),
    ]
    assert [d.delivery_tag for d in seen.deliveries] == [1, 2, 3, 4, 5, 6]


def test_recover_requeue_also_requeues_basic_get_messages(connection: pika.BlockingConnection) -> None:
    # The 0-9-1 errata say messages fetched with basic.get are not recovered; RabbitMQ (3.10) requeues
    # every unacked message of the channel, including those.
    ch, queue = prepared(connection, 3)
    get_tags(ch, queue, 2)
    ch.basic_recover(requeue=True)
    assert drain_redelivered(ch, queue) == [(b"m0", True), (b"m1", True), (b"m2", False)]


def test_recover_requeue_also_requeues_deliveries_of_cancelled_consumers(
    connection: pika.BlockingConnection,
) -> None:
    # Also contrary to the errata: the cancelled consumer's unacked deliveries are requeued too.
    ch, queue = prepared(connection, 3)
    seen = Collector()
    tag = ch.basic_consume(queue, seen)
    pump(connection, lambda: len(seen) == 3, what="3 deliveries")
    ch.basic_cancel(tag)
    ch.basic_recover(requeue=True)
    assert drain_redelivered(ch, queue) == [(b"m0", True), (b"m1", True), (b"m2", True)]


def test_recover_without_requeue_is_540(connection: pika.BlockingConnection) -> None:
    ch = connection.channel()
    with pytest.raises(pika.exceptions.ConnectionClosedByBroker) as excinfo:
        ch.basic_recover(requeue=False)
    assert (excinfo.value.reply_code, excinfo.value.reply_text) == (540, "NOT_IMPLEMENTED - requeue=false")
    assert connection.is_closed


def test_channel_close_requeues_unacked_in_order(connection: pika.BlockingConnection) -> None:
    ch, queue = prepared(connection, 5)
    consumer_ch = connection.channel()
    seen = Collector()
    consumer_ch.basic_consume(queue, seen)
    pump(connection, lambda: len(seen) == 5, what="5 deliveries")
    consumer_ch.basic_ack(seen.deliveries[1].delivery_tag)  # m1 done
    consumer_ch.close()
    assert drain_redelivered(ch, queue) == [(b"m0", True), (b"m2", True), (b"m3", True), (b"m4", True)]


def test_connection_close_requeues_unacked_in_order(connect: ConnectFactory, unique: str) -> None:
    owner = connect()
    ch = owner.channel()
    ch.confirm_delivery()
    queue = ch.queue_declare(f"{unique}-q", auto_delete=False, exclusive=False).method.queue
    try:
        for i in range(4):
            ch.basic_publish("", queue, f"m{i}".encode())
        consumer = connect()
        seen = Collector()
        consumer.channel().basic_consume(queue, seen)
        pump(consumer, lambda: len(seen) == 4, what="4 deliveries")
        consumer.close()
        assert drain_redelivered(ch, queue) == [(b"m0", True), (b"m1", True), (b"m2", True), (b"m3", True)]
    finally:
        ch.queue_delete(queue)


def test_requeued_messages_are_redelivered_before_newer_ones_to_a_new_consumer(
    connection: pika.BlockingConnection,
) -> None:
    ch, queue = prepared(connection, 2)
    get_tags(ch, queue, 2)
    ch.basic_publish("", queue, b"m2")
    ch.basic_recover(requeue=True)
    seen = Collector(auto_ack_in_callback=True)
    connection.channel().basic_consume(queue, seen)
    pump(connection, lambda: len(seen) == 3, what="3 deliveries")
    assert [(d.body, d.redelivered) for d in seen.deliveries] == [
        (b"m0", True),
        (b"m1", True),
        (b"m2", False),
    ]
