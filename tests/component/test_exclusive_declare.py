"""queue.declare as rabbit_channel reads it: ``Durable = DurableDeclare andalso not ExclusiveDeclare``, and
the replicated queue types check auto-delete, exclusive-owner, then non-durable (rabbit_queue_type_util
run_checks order). Both observed on RabbitMQ 3.10.8 by tests/compat/frames (queue_class)."""

from __future__ import annotations

import pytest
from pamqp import commands

from tests.component.harness import Client, close_of


def _client() -> Client:
    client = Client()
    client.handshake()
    client.open_channel(1)
    client.received()
    return client


def test_an_exclusive_queue_redeclared_durable_is_the_same_queue() -> None:
    client = _client()
    client.send(1, commands.Queue.Declare(queue="q", exclusive=True))
    client.send(1, commands.Queue.Declare(queue="q", exclusive=True, durable=True))
    replies = [value for _, value in client.received()]
    assert [type(value).__name__ for value in replies] == ["DeclareOk", "DeclareOk"]


@pytest.mark.parametrize(
    ("flags", "refused"),
    [
        ({"exclusive": True}, "exclusive-owner"),
        ({"exclusive": True, "durable": True}, "exclusive-owner"),
        ({"auto_delete": True}, "auto-delete"),
        ({"auto_delete": True, "exclusive": True}, "auto-delete"),
        ({}, "non-durable"),
    ],
)
@pytest.mark.parametrize("queue_type", ["stream", "quorum"])
def test_replicated_queues_are_refused_for_the_first_failing_check(
    queue_type: str, flags: dict[str, bool], refused: str
) -> None:
    client = _client()
    client.send(1, commands.Queue.Declare(queue="r", arguments={"x-queue-type": queue_type}, **flags))
    channel, code, text = close_of(client.received())
    assert (channel, code) == (1, 406)
    assert text == f"PRECONDITION_FAILED - invalid property '{refused}' for queue 'r' in vhost '/'"
