"""Publisher nacks carry requeue=true, as RabbitMQ's do: rabbit_channel builds #'basic.nack'{delivery_tag,
multiple} and the record's default requeue is true (RabbitMQ 3.10 by tests/compat/frames,
length_limits_and_overflow)."""

from __future__ import annotations

from pamqp import commands, header
from pamqp.body import ContentBody
from pamqp.common import FieldTable

from tests.component.harness import Client


def test_a_rejected_publish_is_nacked_with_requeue_set() -> None:
    client = Client()
    client.handshake()
    client.open_channel(1)
    client.send(1, commands.Confirm.Select())
    arguments: FieldTable = {"x-max-length": 1, "x-overflow": "reject-publish"}
    client.send(1, commands.Queue.Declare(queue="full", exclusive=True, arguments=arguments))
    for body in (b"kept", b"refused"):
        client.send(1, commands.Basic.Publish(exchange="", routing_key="full"))
        client.send(1, header.ContentHeader(0, len(body), commands.Basic.Properties()))
        client.send(1, ContentBody(body))
    nacks = [
        (value.delivery_tag, value.multiple, value.requeue)
        for _, value in client.received()
        if isinstance(value, commands.Basic.Nack)
    ]
    # A lone nack goes through coalesce_and_send: multiple=true up to it (RabbitMQ 3.10 alike).
    assert nacks == [(2, True, True)]
