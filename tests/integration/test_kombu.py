"""kombu on py-amqp (the Celery stack): Connection, Producer, Consumer, SimpleQueue."""

# kombu ships py.typed but most of its API is unannotated.
# mypy: disable-error-code="no-untyped-call"

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import amqp.exceptions
import pytest
from kombu.connection import Connection
from kombu.entity import Exchange, Queue
from kombu.message import Message
from kombu.messaging import Consumer, Producer

from .conftest import Janitor

TIMEOUT_S = 5.0


@pytest.fixture
def kconn(amqp_url: str) -> Iterator[Connection]:
    connection = Connection(amqp_url, connect_timeout=TIMEOUT_S, transport_options={"confirm_publish": True})
    connection.ensure_connection(max_retries=1)
    try:
        yield connection
    finally:
        connection.release()


def drain_until(connection: Connection, done: Callable[[], bool], what: str) -> None:
    """drain_events until ``done()``; every wait is bounded, so a missing message fails instead of hanging."""
    while not done():
        try:
            connection.drain_events(timeout=TIMEOUT_S)
        except TimeoutError:
            raise AssertionError(f"timed out waiting for {what}") from None


def test_simple_queue_round_trip(kconn: Connection, janitor: Janitor, unique: str) -> None:
    name = janitor.queue(janitor.exchange(f"{unique}-simple"))
    queue = kconn.SimpleQueue(name)
    try:
        queue.put({"hello": "world", "n": 1})
        queue.put("second")
        message = queue.get(block=True, timeout=TIMEOUT_S)
        assert message.payload == {"hello": "world", "n": 1}
        assert message.content_type == "application/json"
        message.ack()
        message = queue.get(block=True, timeout=TIMEOUT_S)
        assert message.payload == "second"
        message.ack()
        with pytest.raises(queue.Empty):
            queue.get_nowait()
        assert queue.qsize() == 0
    finally:
        queue.close()


def test_simple_queue_requeue_marks_redelivered(kconn: Connection, janitor: Janitor, unique: str) -> None:
    name = janitor.queue(janitor.exchange(f"{unique}-simple"))
    queue = kconn.SimpleQueue(name)
    try:
        queue.put("task")
        first = queue.get(timeout=TIMEOUT_S)
        assert first.delivery_info["redelivered"] is False
        first.requeue()
        second = queue.get(timeout=TIMEOUT_S)
        assert second.payload == "task"
        assert second.delivery_info["redelivered"] is True
        second.ack()
    finally:
        queue.close()


def test_producer_and_consumer_on_a_topic_exchange(kconn: Connection, janitor: Janitor, unique: str) -> None:
    exchange = Exchange(janitor.exchange(f"{unique}-events"), type="topic", durable=False, auto_delete=False)
    orders = Queue(janitor.queue(f"{unique}-orders"), exchange=exchange, routing_key="order.*", durable=False)
    audit = Queue(janitor.queue(f"{unique}-audit"), exchange=exchange, routing_key="#", durable=False)
    received: dict[str, list[Any]] = {"orders": [], "audit": []}

    def on_order(body: Any, message: Message) -> None:
        received["orders"].append(body)
        message.ack()

    def on_audit(body: Any, message: Message) -> None:
        received["audit"].append((message.delivery_info["routing_key"], body))
        message.ack()

    with (
        Consumer(kconn, queues=[orders], callbacks=[on_order], accept=["json"]),
        Consumer(kconn, queues=[audit], callbacks=[on_audit], accept=["json"]),
    ):
        producer = Producer(kconn, exchange=exchange, serializer="json")
        producer.publish({"id": 1}, routing_key="order.created", declare=[exchange])
        producer.publish({"id": 2}, routing_key="user.created")
        producer.publish({"id": 3}, routing_key="order.paid")
        drain_until(kconn, lambda: len(received["orders"]) + len(received["audit"]) == 5, "5 deliveries")
    assert received["orders"] == [{"id": 1}, {"id": 3}]
    assert received["audit"] == [
        ("order.created", {"id": 1}),
        ("user.created", {"id": 2}),
        ("order.paid", {"id": 3}),
    ]


def test_consumer_prefetch_and_reject(kconn: Connection, janitor: Janitor, unique: str) -> None:
    queue = Queue(janitor.queue(f"{unique}-work"), durable=False)
    producer = Producer(kconn, serializer="json")
    producer.publish("a", routing_key=queue.name, declare=[queue])
    producer.publish("b", routing_key=queue.name)
    seen: list[tuple[Any, bool]] = []

    def on_message(body: Any, message: Message) -> None:
        seen.append((body, message.delivery_info["redelivered"]))
        if body == "a" and not message.delivery_info["redelivered"]:
            message.reject(requeue=True)
        else:
            message.ack()

    with Consumer(kconn, queues=[queue], callbacks=[on_message], accept=["json"], prefetch_count=1):
        drain_until(kconn, lambda: len(seen) == 3, "3 deliveries")
    assert seen == [("a", False), ("a", True), ("b", False)]


def test_passive_declare_of_missing_queue_raises_not_found(kconn: Connection, unique: str) -> None:
    channel = kconn.channel()
    with pytest.raises(amqp.exceptions.NotFound) as excinfo:
        Queue(f"{unique}-missing", channel=channel).queue_declare(passive=True)
    assert excinfo.value.reply_code == 404
    assert excinfo.value.reply_text == f"NOT_FOUND - no queue '{unique}-missing' in vhost '/'"


def test_inequivalent_queue_raises_precondition_failed(
    kconn: Connection, janitor: Janitor, unique: str
) -> None:
    name = janitor.queue(f"{unique}-q")
    Queue(name, durable=False, channel=kconn.channel()).declare()
    with pytest.raises(amqp.exceptions.PreconditionFailed) as excinfo:
        Queue(name, durable=True, channel=kconn.channel()).declare()
    assert excinfo.value.reply_code == 406
    assert excinfo.value.reply_text == (
        f"PRECONDITION_FAILED - inequivalent arg 'durable' for queue '{name}' in vhost '/': "
        "received 'true' but current is 'false'"
    )


def test_publish_confirm_reports_unroutable_mandatory(kconn: Connection, unique: str) -> None:
    producer = Producer(kconn, exchange=Exchange("amq.direct", type="direct", passive=True))
    returned: list[Any] = []
    producer.on_return = lambda exc, exchange, routing_key, message: returned.append(
        (exc, exchange, routing_key)
    )
    # With confirm_publish, publish() waits for the ack, and RabbitMQ sends basic.return before that ack.
    producer.publish({"x": 1}, routing_key=f"{unique}-nobody", mandatory=True, serializer="json")
    assert len(returned) == 1
    exc, exchange, routing_key = returned[0]
    assert (exc.reply_code, exc.reply_text) == (312, "NO_ROUTE")
    assert (exchange, routing_key) == ("amq.direct", f"{unique}-nobody")


def test_deleting_the_consumed_queue_through_the_consumers_channel(
    kconn: Connection, janitor: Janitor, unique: str
) -> None:
    # kombu's own suite deletes its queue so while consuming (test_ack_from_another_thread), and py-amqp,
    # waiting for queue.delete-ok, raises ConsumerCancelled at a basic.cancel that comes first. RabbitMQ's
    # channel sends delete-ok, then basic.cancel when the deleted queue's 'DOWN' reaches it.
    queue = Queue(janitor.queue(f"{unique}-consumed"), durable=False)
    Producer(kconn, serializer="json").publish("only", routing_key=queue.name, declare=[queue])
    seen: list[Any] = []

    def on_message(body: Any, message: Message) -> None:
        seen.append(body)
        message.ack()

    channel = kconn.default_channel
    with Consumer(channel, queues=[queue], callbacks=[on_message], accept=["json"], prefetch_count=1):
        drain_until(kconn, lambda: seen == ["only"], "the delivery")
        assert queue(channel).delete() == 0
    assert seen == ["only"]
