"""A publish confirmed and delivered on one channel: the basic.deliver goes out before the basic.ack, as
RabbitMQ's channel sends the confirms it collected only once its mailbox (holding the delivery) is empty
(RabbitMQ 3.10.8 by tests/compat/frames, consumers_round_robin_and_exclusive)."""

from __future__ import annotations

from pamqp import commands, frame, header
from pamqp.body import ContentBody

from tests.component.harness import Client


def test_the_own_consumers_delivery_precedes_the_publishers_confirm() -> None:
    client = Client()
    client.handshake()
    client.open_channel(1)
    client.send(1, commands.Confirm.Select())
    client.send(1, commands.Queue.Declare(queue="q", exclusive=True))
    client.send(1, commands.Basic.Consume(queue="q", consumer_tag="c", no_ack=True))
    client.received()
    client.feed(
        frame.marshal(commands.Basic.Publish(exchange="", routing_key="q"), 1)
        + frame.marshal(header.ContentHeader(0, 1, commands.Basic.Properties()), 1)
        + frame.marshal(ContentBody(b"m"), 1)
    )
    names = [type(value).__name__ for _, value in client.received()]
    assert names == ["Deliver", "ContentHeader", "ContentBody", "Ack"]
