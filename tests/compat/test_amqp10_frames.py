"""The frame-exact harness for AMQP 1.0: python-qpid-proton scenarios run through the recording proxy
against WarrenMQ (``--profile rabbitmq-4.0``) and RabbitMQ 4.0.5, and every frame each broker sent compared,
per connection and session, field by field with each value's AMQP format code (frames/amqp10_wire.py decodes
them; amqp10_transcript.normalise says what is not compared, and why). The oracle skips with the reason when
podman or its image is missing."""

from __future__ import annotations

import uuid
from collections.abc import Callable

import pytest
from proton import Message
from proton.reactor import AtMostOnce
from proton.utils import BlockingConnection, SendException

from tests.compat.amqp10_support import RABBITMQ4, WARRENMQ, broker_port, pika_channel
from tests.compat.frames.amqp10_transcript import per_channel
from tests.compat.frames.amqp10_wire import Amqp10Splitter
from tests.compat.frames.compare import Transcript
from tests.compat.frames.proxy import RecordingProxy

pytestmark = pytest.mark.compat

# What python-qpid-proton generates per run: its container-id and link names (UUIDs).
GENERATED = (r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",)
TIMEOUT_S = 10


def _url(port: int) -> str:
    return f"amqp://guest:guest@127.0.0.1:{port}"


def _connect(port: int) -> BlockingConnection:
    return BlockingConnection(_url(port), timeout=TIMEOUT_S, sasl_enabled=True, allowed_mechs="PLAIN")


def open_and_close(port: int, prefix: str) -> None:
    _connect(port).close()


def publish_accepted(port: int, prefix: str) -> None:
    connection = _connect(port)
    sender = connection.create_sender(f"/queues/{prefix}-q")
    for number in range(2):
        sender.send(Message(body=f"m{number}", properties={"n": number}, durable=True))
    sender.close()  # type: ignore[no-untyped-call]
    connection.close()


def publish_unroutable(port: int, prefix: str) -> None:
    connection = _connect(port)
    sender = connection.create_sender(f"/exchanges/amq.direct/{prefix}-nowhere")
    with pytest.raises(SendException):
        sender.send(Message(body="released"))
    sender.close()  # type: ignore[no-untyped-call]
    connection.close()


def consume_with_each_settlement(port: int, prefix: str) -> None:
    connection = _connect(port)
    receiver = connection.create_receiver(f"/queues/{prefix}-q", credit=1)
    receiver.receive(TIMEOUT_S)
    receiver.accept()
    receiver.receive(TIMEOUT_S)
    receiver.release()
    receiver.receive(TIMEOUT_S)
    receiver.reject()
    receiver.close()  # type: ignore[no-untyped-call]
    connection.close()


def publish_settled_and_consume_settled(port: int, prefix: str) -> None:
    """At most once both ways: no disposition from the broker for what it receives or sends."""
    connection = _connect(port)
    sender = connection.create_sender(f"/queues/{prefix}-q", options=AtMostOnce())
    sender.send(Message(body="fire and forget"))
    receiver = connection.create_receiver(f"/queues/{prefix}-q", credit=1, options=AtMostOnce())
    receiver.receive(TIMEOUT_S)
    receiver.close()  # type: ignore[no-untyped-call]
    sender.close()  # type: ignore[no-untyped-call]
    connection.close()


def round_trip_of_every_section(port: int, prefix: str) -> None:
    """A message with every section a client sets, published and consumed over AMQP 1.0: what the broker adds
    (annotations, header) and what it passes through as sent."""
    connection = _connect(port)
    sender = connection.create_sender(f"/exchanges/amq.direct/{prefix}-key")
    message = Message(
        body=b"\x00binary\xff",
        id="message-1",
        correlation_id=42,
        subject="the subject",
        reply_to="/queues/elsewhere",
        content_type="application/octet-stream",
        priority=7,
        ttl=60.0,
        durable=True,
        properties={"string": "s", "int": -3, "bool": True, "double": 1.5},
        annotations={"x-opt-custom": "annotation"},
    )
    with pytest.raises(SendException):
        sender.send(message)  # nothing is bound yet: released
    sender.close()  # type: ignore[no-untyped-call]
    receiver = connection.create_receiver(f"/queues/{prefix}-q", credit=2)
    for number in range(2):
        sender = connection.create_sender(f"/queues/{prefix}-q")
        sender.send(Message(body=f"second {number}", properties={"n": number}))
        sender.close()  # type: ignore[no-untyped-call]
        receiver.receive(TIMEOUT_S)
        receiver.accept()
    receiver.close()  # type: ignore[no-untyped-call]
    connection.close()


SCENARIOS: dict[str, Callable[[int, str], None]] = {
    scenario.__name__: scenario
    for scenario in (
        open_and_close,
        publish_accepted,
        publish_unroutable,
        consume_with_each_settlement,
        publish_settled_and_consume_settled,
        round_trip_of_every_section,
    )
}


# Messages published with pika into the scenario's queue (``<prefix>-q``) before it runs.
PUBLISHED = {
    "consume_with_each_settlement": (b"a", b"b", b"c"),
}


def _recorded(broker: int, name: str) -> Transcript:
    prefix = f"f10-{uuid.uuid4().hex[:8]}"
    setup = pika_channel(broker)
    setup.queue_declare(f"{prefix}-q", durable=True)
    setup.confirm_delivery()
    for body in PUBLISHED.get(name, ()):
        setup.basic_publish("", f"{prefix}-q", body)
    try:
        with RecordingProxy(f"amqp://127.0.0.1:{broker}/", splitter=Amqp10Splitter) as proxy:
            SCENARIOS[name](proxy.port, prefix)
            proxy.settle(5.0)
            return per_channel(proxy.recordings, prefix, GENERATED)
    finally:
        setup.queue_delete(f"{prefix}-q")
        setup.connection.close()


@pytest.fixture
def ports(request: pytest.FixtureRequest) -> tuple[int, int]:
    return broker_port(request, WARRENMQ), broker_port(request, RABBITMQ4)


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_warrenmq_sends_rabbitmq4s_amqp10_frames(ports: tuple[int, int], name: str) -> None:
    ours, theirs = ports
    expected = _recorded(theirs, name)
    observed = _recorded(ours, name)
    difference = observed.diff(expected)
    assert not difference, f"frames differ (- RabbitMQ 4.0.5, + WarrenMQ):\n{difference}"
