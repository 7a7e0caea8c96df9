"""RabbitMQ 4.0 still accepts AMQP 1.0 v1 addresses (deprecated): /exchange/:exchange/:key, /topic/:key,
/amq/queue/:queue, /queue/:queue and a bare name (both declare their queue when missing), /queue (the subject
names the queue). Against WarrenMQ (--profile rabbitmq-4.0) and RabbitMQ 4.0.5 (skipped with the reason when
podman or its image is missing); the expected values are 4.0.5's."""

from __future__ import annotations

import uuid
from urllib.parse import quote

import pytest
import requests
from proton import Delivery, Message
from proton.utils import BlockingConnection, SendException

from tests.compat.amqp10_support import BROKERS, broker_http_url, broker_port, pika_channel, proton_url

pytestmark = pytest.mark.compat


@pytest.mark.parametrize("which", BROKERS)
def test_v1_targets_and_sources(request: pytest.FixtureRequest, which: str) -> None:
    port = broker_port(request, which)
    api = broker_http_url(request, which)
    tag = uuid.uuid4().hex[:8]
    bound = f"v1-bound-{tag}"
    channel = pika_channel(port)
    channel.queue_declare(bound)
    channel.queue_bind(bound, "amq.direct", f"rk-{tag}")
    channel.queue_bind(bound, "amq.topic", f"t-{tag}")
    outcomes = {}
    connection = BlockingConnection(proton_url(port), timeout=10)
    try:
        for address in [
            f"v1-bare-{tag}",
            f"/queue/v1-declared-{tag}",
            f"/amq/queue/{bound}",
            f"/exchange/amq.direct/rk-{tag}",
            "/exchange/amq.direct",
            f"/topic/t-{tag}",
            "/queue",
        ]:
            sender = connection.create_sender(address)
            try:
                message = Message(body=address.encode(), inferred=True, subject=f"rk-{tag}")
                outcomes[address] = int(sender.send(message).remote_state)
            except SendException as refused:
                outcomes[address] = int(refused.state)
        receiver = connection.create_receiver(f"/amq/queue/{bound}", credit=1)
        first = receiver.receive(timeout=10)
        receiver.accept()
    finally:
        connection.close()
    declared = {}
    for name in (f"v1-bare-{tag}", f"v1-declared-{tag}"):
        reply = requests.get(f"{api}/api/queues/%2F/{quote(name)}", auth=("guest", "guest"), timeout=10)
        declared[name] = reply.json().get("durable") if reply.ok else None
        channel.queue_delete(name)
    left = channel.queue_declare(bound, passive=True).method.message_count
    channel.queue_delete(bound)
    channel.connection.close()
    accepted, released = Delivery.ACCEPTED, Delivery.RELEASED
    assert outcomes == {
        f"v1-bare-{tag}": accepted,
        f"/queue/v1-declared-{tag}": accepted,
        f"/amq/queue/{bound}": accepted,
        f"/exchange/amq.direct/rk-{tag}": accepted,
        "/exchange/amq.direct": accepted,  # the subject is the routing key
        f"/topic/t-{tag}": accepted,
        "/queue": released,  # the subject names a queue that does not exist
    }
    assert declared == {f"v1-bare-{tag}": False, f"v1-declared-{tag}": False}
    assert first.body == f"/amq/queue/{bound}".encode()
    assert left == 3
