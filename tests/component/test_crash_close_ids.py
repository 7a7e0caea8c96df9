"""A bare 541 INTERNAL_ERROR stands for a crash of RabbitMQ's channel process: its connection.close carries
class and method 0/0 (rabbit_binary_generator:map_exception for a reason that is not an #amqp_error{}), not
the ids of the method that crashed it. Observed on RabbitMQ 3.10.8 by tests/compat/frames
(stream_max_age_values)."""

from __future__ import annotations

from pamqp import commands

from tests.component.harness import Client


def test_an_emulated_crash_closes_the_connection_with_ids_0_0() -> None:
    client = Client()
    client.handshake()
    client.open_channel(1)
    client.received()
    # x-max-age without leading digits: RabbitMQ 3.10.8's list_to_integer crashes the channel.
    client.send(
        1,
        commands.Queue.Declare(
            queue="s", durable=True, arguments={"x-queue-type": "stream", "x-max-age": "D"}
        ),
    )
    closes = [
        (channel, value.reply_code, value.class_id, value.method_id)
        for channel, value in client.received()
        if isinstance(value, commands.Connection.Close)
    ]
    assert closes == [(0, 541, 0, 0)]
