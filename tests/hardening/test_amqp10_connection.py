"""An AMQP 1.0 connection that sends garbage, or goes away holding deliveries, costs the broker that
connection only: it is closed with an error, what it held goes back to its queue, and the broker serves the
next client of either protocol."""

from __future__ import annotations

import random
import signal
import time
import uuid
from pathlib import Path
from typing import Any

import pika
import pytest
from proton import Message
from proton.utils import BlockingConnection

from protocol.amqp10.condition import Error
from protocol.amqp10.delivery_states import Accepted
from protocol.amqp10.message import encode_sections
from protocol.amqp10.performatives import Attach, Close, Detach, Disposition, End, Flow, Transfer
from protocol.amqp10.sections import Data
from protocol.amqp10.terminus import Source, Target
from protocol.amqp10.types import Symbol
from tests.compat.amqp10_support import EOF_, RESET, RawClient, performatives, pika_channel, proton_url
from tests.conftest import BrokerProcess
from tests.hardening.served import serve


@pytest.fixture
def port(warrenmq_40: BrokerProcess) -> int:
    return warrenmq_40.port


def _still_serving(port: int) -> None:
    """A 0-9-1 client and a 1.0 client both work."""
    channel = pika_channel(port)
    name = f"alive-{uuid.uuid4().hex[:8]}"
    channel.queue_declare(name, auto_delete=True)
    connection = BlockingConnection(proton_url(port), timeout=10)
    try:
        connection.create_sender(f"/queues/{name}").send(Message(body="ok"))
    finally:
        connection.close()
    assert channel.queue_declare(name, passive=True).method.message_count == 1
    channel.connection.close()


@pytest.mark.parametrize("seed", range(8))
def test_garbage_after_open_closes_the_connection(port: int, seed: int) -> None:
    rng = random.Random(seed)
    client = RawClient(port)
    client.login()
    client.begin()
    # Frames of random bodies with a valid frame header, then raw random octets.
    for _ in range(5):
        body = rng.randbytes(rng.randrange(1, 64))
        client.send((len(body) + 8).to_bytes(4, "big") + b"\x02\x00\x00\x00" + body)
    client.send(rng.randbytes(256))
    items = client.read_until(lambda items: bool(items) and items[-1] in (EOF_, RESET), deadline_s=15)
    client.close()
    closes = [p for p in performatives(items) if isinstance(p, Close)]
    assert closes, items
    assert closes[0].error is not None
    _still_serving(port)


def test_a_dropped_connection_gives_back_its_deliveries_and_consumers(port: int) -> None:
    name = f"held-{uuid.uuid4().hex[:8]}"
    channel = pika_channel(port)
    channel.queue_declare(name)
    channel.confirm_delivery()
    channel.basic_publish("", name, b"one")
    channel.basic_publish("", name, b"two")
    client = RawClient(port)
    client.login()
    client.begin()
    source = Source(address=f"/queues/{name}")
    client.perform(Attach(name="r", handle=0, role=True, source=source, target=Target()))
    client.read_count(1)
    client.perform(
        Flow(
            next_incoming_id=2**32 - 4,
            incoming_window=100,
            next_outgoing_id=0,
            outgoing_window=100,
            handle=0,
            delivery_count=2**32 - 5,
            link_credit=2,
        )
    )
    client.read_count(2)
    client.close()  # no detach, no end, no close: the socket goes
    deadline = time.monotonic() + 10
    declared = channel.queue_declare(name, passive=True).method
    while (declared.message_count, declared.consumer_count) != (2, 0) and time.monotonic() < deadline:
        time.sleep(0.05)
        declared = channel.queue_declare(name, passive=True).method
    assert (declared.message_count, declared.consumer_count) == (2, 0)
    method, _, body = channel.basic_get(name, auto_ack=True)
    assert (body, method.redelivered) == (b"one", True)
    channel.queue_delete(name)
    channel.connection.close()


def test_pika_connection_unaffected_by_a_refused_amqp10_login(port: int) -> None:
    """A refused 1.0 login waits 3 s before its outcome; the broker serves others meanwhile."""
    client = RawClient(port)
    client.send(b"AMQP\x03\x01\x00\x00")
    client.read_count(2)
    from protocol.amqp10.sasl import SaslInit
    from protocol.amqp10.types import Symbol

    client.sasl(SaslInit(mechanism=Symbol("PLAIN"), initial_response=b"\0guest\0wrong"))
    started = time.monotonic()
    _still_serving(port)
    assert time.monotonic() - started < 3.0
    client.close()
    connection = pika.BlockingConnection(pika.ConnectionParameters("127.0.0.1", port))
    connection.close()


def test_stopping_node_closes_amqp10_connections(broker_factory: Any) -> None:
    """With RabbitMQ 4.0.5's close (observed on it): amqp:internal-error, 'Connection forced: "..."'."""
    broker = broker_factory("--profile", "rabbitmq-4.0")
    client = RawClient(broker.port)
    client.login()
    broker.process.send_signal(signal.SIGTERM)
    items = client.read_until(lambda items: bool(items) and items[-1] in (EOF_, RESET), deadline_s=15)
    client.close()
    closes = [p for p in performatives(items) if isinstance(p, Close)]
    assert closes == [
        Close(
            error=Error(
                condition=Symbol("amqp:internal-error"),
                description="Connection forced: \"broker forced connection closure with reason 'shutdown'\"",
            )
        )
    ]
    assert broker.process.wait(timeout=15) == 0


def test_a_silent_client_is_closed_after_its_idle_time_out(broker_factory: Any) -> None:
    """With heartbeat 2 s the open announces idle-time-out 1000 ms; a client that sends nothing for two
    checks (1 s apart) is closed with amqp:resource-limit-exceeded. Empty frames from the broker keep
    coming meanwhile (the client announced an idle-time-out of its own)."""
    broker = broker_factory("--profile", "rabbitmq-4.0", "--heartbeat", "2")
    client = RawClient(broker.port)
    client.login()
    started = time.monotonic()
    items = client.read_until(lambda items: bool(items) and items[-1] in (EOF_, RESET), deadline_s=15)
    took_s = time.monotonic() - started
    client.close()
    (closed,) = [p for p in performatives(items) if isinstance(p, Close)]
    assert isinstance(closed.error, Error)
    assert closed.error.condition == "amqp:resource-limit-exceeded"
    assert 1.5 < took_s < 6


def test_resource_alarm_closes_the_sessions_incoming_window(tmp_path: Path) -> None:
    """Under a resource alarm RabbitMQ 4.0.5 sends a session flow with incoming-window 0 (and 0 in every
    later flow) instead of blocking the socket, and still takes transfers sent anyway (observed on it)."""
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    env = {"WARRENMQ_DATA_DIR": str(data_dir), "WARRENMQ_PROFILE": "rabbitmq-4.0"}
    broker = serve(tmp_path, "disk_free_limit.absolute = 1000000GB\n", env=env)
    try:
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and not broker.http("/api/nodes")[1][0]["disk_free_alarm"]:
            time.sleep(0.1)
        channel = pika_channel(broker.port)
        channel.queue_declare("alarmed")
        client = RawClient(broker.port)
        client.login()
        client.begin()
        (closed_window,) = performatives(client.read_count(1))
        target = Target(address="/queues/alarmed")
        client.perform(Attach(name="s", handle=0, role=False, initial_delivery_count=0, target=target))
        _, credit = performatives(client.read_count(2))
        transfer = Transfer(handle=0, delivery_id=0, delivery_tag=b"0", message_format=0)
        client.perform(transfer, payload=encode_sections([Data(b"anyway")]))
        (outcome,) = performatives(client.read_count(1))
        client.close()
        channel.connection.close()
    finally:
        broker.stop()
    assert isinstance(closed_window, Flow)
    assert (closed_window.handle, closed_window.incoming_window) == (None, 0)
    assert isinstance(credit, Flow)
    assert (credit.handle, credit.link_credit, credit.incoming_window) == (0, 170, 0)
    assert outcome == Disposition(role=True, first=0, settled=True, state=Accepted())


def test_a_disposition_over_every_delivery_id_settles_what_is_outstanding_at_once(port: int) -> None:
    """first=0, last=2^32-1 names four billion ids: the broker settles the outstanding ones without walking
    the range, and answers the next request at once."""
    name = f"range-{uuid.uuid4().hex[:8]}"
    channel = pika_channel(port)
    channel.queue_declare(name)
    channel.confirm_delivery()
    for body in (b"a", b"b", b"c"):
        channel.basic_publish("", name, body)
    client = RawClient(port)
    client.login()
    client.begin()
    client.perform(
        Attach(name="r", handle=0, role=True, source=Source(address=f"/queues/{name}"), target=Target())
    )
    client.read_count(1)
    flow = Flow(
        next_incoming_id=2**32 - 4,
        incoming_window=100,
        next_outgoing_id=0,
        outgoing_window=100,
        handle=0,
        delivery_count=2**32 - 5,
        link_credit=3,
    )
    client.perform(flow)
    client.read_count(3)
    started = time.monotonic()
    client.perform(Disposition(role=True, first=0, last=2**32 - 1, settled=True, state=Accepted()))
    client.perform(Detach(handle=0, closed=True))
    client.read_count(1)
    client.close()
    assert time.monotonic() - started < 2.0
    assert channel.queue_declare(name, passive=True).method.message_count == 0
    channel.queue_delete(name)
    channel.connection.close()


def test_a_message_over_max_message_size_detaches_the_link_before_it_is_buffered(broker_factory: Any) -> None:
    """The attach announces max_message_size; a transfer growing past it (more=true frames) detaches the
    link with amqp:link:message-size-exceeded as soon as it does, and the session carries on."""
    broker = broker_factory("--profile", "rabbitmq-4.0", "--max-message-size", "4096")
    client = RawClient(broker.port)
    client.login()
    client.begin()
    target = Target(address="/exchanges/amq.fanout")
    client.perform(Attach(name="s", handle=0, role=False, initial_delivery_count=0, target=target))
    attached, _ = performatives(client.read_count(2))
    assert isinstance(attached, Attach)
    assert attached.max_message_size == 4096
    for part in range(3):
        transfer = Transfer(handle=0, delivery_id=0, delivery_tag=b"0", message_format=0, more=True)
        client.perform(transfer if part == 0 else Transfer(handle=0, more=True), payload=b"\x00" * 2000)
    (detached,) = performatives(client.read_count(1))
    client.perform(End())
    (ended,) = performatives(client.read_count(1))
    client.close()
    assert isinstance(detached, Detach)
    assert detached.closed
    assert isinstance(detached.error, Error)
    assert detached.error.condition == "amqp:link:message-size-exceeded"
    assert ended == End()
