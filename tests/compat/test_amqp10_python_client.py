"""RabbitMQ's own AMQP 1.0 client, rabbitmq-amqp-python-client (on python-qpid-proton), against WarrenMQ
(--profile rabbitmq-4.0) and RabbitMQ 4.0.5 (skipped with the reason when podman or its image is missing):
its management (the `/management` node), a publisher's outcomes and a consumer's settlements observe the
same on both. A stream is only declared here; the client reads streams in test_amqp10_streams_publish.py."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from rabbitmq_amqp_python_client import (
    AddressHelper,
    AmqpMessageRejectedException,
    AMQPMessagingHandler,
    ClassicQueueSpecification,
    Connection,
    Environment,
    Event,
    ExchangeSpecification,
    ExchangeToExchangeBindingSpecification,
    ExchangeToQueueBindingSpecification,
    ExchangeType,
    Message,
    QueueType,
    QuorumQueueSpecification,
    StreamSpecification,
    ValidationCodeException,
)
from rabbitmq_amqp_python_client.qpid.proton._delivery import Delivery
from rabbitmq_amqp_python_client.qpid.proton._utils import SendException

from tests.compat.amqp10_support import BROKERS, broker_port

pytestmark = pytest.mark.compat


@pytest.fixture(params=BROKERS)
def connection(request: pytest.FixtureRequest) -> Iterator[Connection]:
    environment = Environment(f"amqp://guest:guest@127.0.0.1:{broker_port(request, request.param)}/")
    connection = environment.connection()
    connection.dial()
    try:
        yield connection
    finally:
        environment.close()


@pytest.fixture
def name(connection: Connection) -> Iterator[str]:
    """A fresh name; the queues and exchanges named after it are deleted afterwards."""
    base = f"client-{uuid.uuid4().hex[:10]}"
    yield base
    management = connection.management()
    for suffix in ("", "-qq", "-stream", "-dlq"):
        management.delete_queue(base + suffix)
    for suffix in ("-x", "-x2"):
        management.delete_exchange(base + suffix)


def _info(connection: Connection, queue: str) -> dict[str, Any]:
    """queue_info as plain values, the node's name left out (it differs by broker)."""
    info = connection.management().queue_info(queue)
    return {
        "name": info.name,
        "durable": info.is_durable,
        "auto_delete": info.is_auto_delete,
        "exclusive": info.is_exclusive,
        "type": info.queue_type,
        "arguments": dict(info.arguments),
        "message_count": info.message_count,
        "consumer_count": info.consumer_count,
        "members": len(info.members.elements),  # type: ignore[attr-defined]  # a proton Array, typed str
    }


def test_management(connection: Connection, name: str) -> None:
    management = connection.management()
    management.declare_queue(ClassicQueueSpecification(name=name, max_len=10))
    management.declare_queue(QuorumQueueSpecification(name=f"{name}-qq"))
    management.declare_exchange(ExchangeSpecification(name=f"{name}-x", exchange_type=ExchangeType.topic))
    management.declare_exchange(ExchangeSpecification(name=f"{name}-x2", exchange_type=ExchangeType.fanout))
    to_queue = management.bind(
        ExchangeToQueueBindingSpecification(
            source_exchange=f"{name}-x", destination_queue=name, binding_key="a.#"
        )
    )
    assert to_queue == f"/bindings/src={name}-x;dstq={name};key=a.%23;args="
    management.bind(
        ExchangeToExchangeBindingSpecification(
            source_exchange=f"{name}-x2", destination_exchange=f"{name}-x", binding_key="a.b"
        )
    )
    publisher = connection.publisher(AddressHelper.exchange_address(f"{name}-x2", "a.b"))
    for body in (b"one", b"two"):
        assert publisher.publish(Message(body=body)).remote_state == Delivery.ACCEPTED
    publisher.close()
    assert _info(connection, name) == {
        "name": name,
        "durable": True,
        "auto_delete": False,
        "exclusive": False,
        "type": QueueType.classic,
        "arguments": {"x-max-length": 10, "x-queue-type": "classic"},
        "message_count": 2,
        "consumer_count": 0,
        "members": 1,
    }
    assert _info(connection, f"{name}-qq")["type"] == QueueType.quorum
    # A stream is declared through the node too (read with this client in test_amqp10_streams_publish.py).
    management.declare_queue(StreamSpecification(name=f"{name}-stream", max_len_bytes=10_000_000))
    stream = _info(connection, f"{name}-stream")
    assert (stream["type"], stream["arguments"]) == (
        QueueType.stream,
        {"x-queue-type": "stream", "x-max-length-bytes": 10_000_000},
    )
    assert management.purge_queue(name) == 2
    management.unbind(to_queue)
    with pytest.raises(SendException):  # released: no binding any more
        connection.publisher(AddressHelper.exchange_address(f"{name}-x", "a.b")).publish(Message(body=b"x"))
    # A redeclare with other arguments is 409, which the client raises as ErrPreconditionFailed.
    with pytest.raises(ValidationCodeException, match="ErrPreconditionFailed"):
        management.declare_queue(ClassicQueueSpecification(name=name, max_len=20))
    management.delete_exchange(f"{name}-x")
    management.delete_queue(name)
    with pytest.raises(ValidationCodeException, match="wrong response code received: 404"):
        management.queue_info(name)


def test_publisher_outcomes(connection: Connection, name: str) -> None:
    """Accepted once routed, released when unroutable (SendException), rejected when the queue refuses it
    (x-overflow reject-publish: AmqpMessageRejectedException)."""
    management = connection.management()
    management.declare_queue(
        ClassicQueueSpecification(name=name, max_len=1, overflow_behaviour="reject-publish")
    )
    management.declare_exchange(ExchangeSpecification(name=f"{name}-x", exchange_type=ExchangeType.direct))
    publisher = connection.publisher(AddressHelper.queue_address(name))
    assert publisher.publish(Message(body=b"fits")).remote_state == Delivery.ACCEPTED
    with pytest.raises(AmqpMessageRejectedException, match="Message has been rejected"):
        publisher.publish(Message(body=b"over the limit"))
    publisher.close()
    unroutable = connection.publisher(AddressHelper.exchange_address(f"{name}-x", "nowhere"))
    with pytest.raises(SendException) as released:
        unroutable.publish(Message(body=b"x"))
    assert released.value.state == Delivery.RELEASED
    unroutable.close()
    # No address on the publisher: each message's `to` names it.
    anonymous = connection.publisher()
    message = Message(body=b"addressed")
    message.address = AddressHelper.queue_address(f"{name}-qq")
    with pytest.raises(SendException) as missing:  # to a queue that is not there: released too
        anonymous.publish(message)
    assert missing.value.state == Delivery.RELEASED
    anonymous.close()
    assert _info(connection, name)["message_count"] == 1


class _Settler(AMQPMessagingHandler):
    """Settles each message as its body says; stops the consumer's run() once ``until`` messages came."""

    class Done(Exception):
        pass

    def __init__(self, until: int) -> None:
        super().__init__()
        self.until = until
        self.seen: list[bytes] = []

    def on_amqp_message(self, event: Event) -> None:
        body = bytes(event.message.body)
        self.seen.append(body)
        if body == b"accept" or (body == b"requeue" and self.seen.count(body) > 1):
            self.delivery_context.accept(event)
        elif body == b"requeue":
            self.delivery_context.requeue(event)
        else:
            self.delivery_context.discard(event)
        if len(self.seen) >= self.until:
            raise _Settler.Done()


def test_consumer_settlements(connection: Connection, name: str) -> None:
    """accept acks, requeue puts the message back (delivered again), discard dead-letters."""
    management = connection.management()
    management.declare_queue(ClassicQueueSpecification(name=f"{name}-dlq"))
    management.declare_queue(
        ClassicQueueSpecification(name=name, dead_letter_exchange="", dead_letter_routing_key=f"{name}-dlq")
    )
    publisher = connection.publisher(AddressHelper.queue_address(name))
    for body in (b"accept", b"requeue", b"discard"):
        publisher.publish(Message(body=body))
    publisher.close()
    settler = _Settler(until=4)
    consumer = connection.consumer(AddressHelper.queue_address(name), message_handler=settler)
    with pytest.raises(_Settler.Done):
        consumer.run()
    consumer.close()
    assert sorted(settler.seen) == [b"accept", b"discard", b"requeue", b"requeue"]
    assert _info(connection, name)["message_count"] == 0
    assert _info(connection, f"{name}-dlq")["message_count"] == 1
