"""basic.reject and basic.nack of a stream delivery close the connection with 540 naming the method (60/90,
60/120), as RabbitMQ 3.10.8 does (tests/compat/frames, stream_refused_operations); the session's fast path for
acks, nacks and rejects bypasses the handlers' table, so the ids are filled where its errors land."""

from __future__ import annotations

import pytest
from pamqp import commands, header
from pamqp.base import Frame
from pamqp.body import ContentBody

from tests.component.harness import Client


@pytest.mark.parametrize(
    ("settle", "ids"),
    [
        (commands.Basic.Reject(delivery_tag=1, requeue=True), (60, 90)),
        (commands.Basic.Nack(delivery_tag=1, requeue=False), (60, 120)),
    ],
)
def test_refused_stream_settlements_name_their_method(settle: Frame, ids: tuple[int, int]) -> None:
    client = Client()
    client.handshake()
    client.open_channel(1)
    client.send(1, commands.Queue.Declare(queue="s", durable=True, arguments={"x-queue-type": "stream"}))
    client.send(1, commands.Basic.Publish(exchange="", routing_key="s"))
    client.send(1, header.ContentHeader(0, 1, commands.Basic.Properties()))
    client.send(1, ContentBody(b"x"))
    client.send(1, commands.Basic.Qos(prefetch_count=10))
    client.send(1, commands.Basic.Consume(queue="s", arguments={"x-stream-offset": "first"}))
    client.received()
    client.send(1, settle)
    closes = [
        (channel, value.reply_code, (value.class_id, value.method_id))
        for channel, value in client.received()
        if isinstance(value, commands.Connection.Close)
    ]
    assert closes == [(0, 540, ids)]
