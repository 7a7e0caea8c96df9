"""Message priorities, consumer priorities, single active consumer, quorum/stream declarations and the
quorum delivery limit (texts verified against RabbitMQ 3.10.8)."""

from __future__ import annotations

from typing import Any

import pytest
from pamqp import commands

from tests.component.features import TimedClient
from tests.component.harness import close_of


def test_higher_priority_messages_are_delivered_first_and_over_max_counts_as_max() -> None:
    client = TimedClient()
    client.declare("q", **{"x-max-priority": 5})
    client.publish(1, b"none", "q")
    client.publish(1, b"p1", "q", priority=1)
    client.publish(1, b"p9", "q", priority=9)  # capped at 5
    client.publish(1, b"p5", "q", priority=5)
    assert client.bodies("q") == [b"p9", b"p5", b"p1", b"none"]


def test_requeued_message_returns_to_its_place_within_its_priority() -> None:
    client = TimedClient()
    client.declare("q", **{"x-max-priority": 2})
    for body, priority in ((b"a", 1), (b"b", 1), (b"c", 2)):
        client.publish(1, body, "q", priority=priority)
    client.get("q", no_ack=False)  # c
    client.get("q", no_ack=False)  # a
    client.send(1, commands.Basic.Nack(delivery_tag=0, multiple=True, requeue=True))
    assert client.bodies("q") == [b"c", b"a", b"b"]


def test_queue_without_max_priority_ignores_message_priority() -> None:
    client = TimedClient()
    client.declare("q")
    client.publish(1, b"low", "q", priority=0)
    client.publish(1, b"high", "q", priority=9)
    assert client.bodies("q") == [b"low", b"high"]


def _consume(client: TimedClient, tag: str, channel: int, prefetch: int, **arguments: Any) -> None:
    if channel != 1:
        client.open_channel(channel)
    client.send(channel, commands.Basic.Qos(prefetch_count=prefetch))
    client.send(channel, commands.Basic.Consume(queue="q", consumer_tag=tag, arguments=arguments))
    client.received()


def test_highest_priority_consumer_gets_messages_until_its_prefetch_is_full() -> None:
    client = TimedClient()
    client.declare("q")
    _consume(client, "low", 1, 10)
    _consume(client, "high", 2, 2, **{"x-priority": 10})
    for n in range(4):
        client.publish(1, str(n).encode(), "q")
    tags = [deliver.consumer_tag for deliver, _, _ in client.deliveries()]
    assert tags == ["high", "high", "low", "low"]


def test_single_active_consumer_delivers_to_one_consumer_then_fails_over() -> None:
    client = TimedClient()
    client.declare("q", **{"x-single-active-consumer": True})
    _consume(client, "first", 1, 0)
    _consume(client, "second", 2, 0)
    client.publish(1, b"1", "q")
    client.publish(1, b"2", "q")
    assert [d.consumer_tag for d, _, _ in client.deliveries()] == ["first", "first"]
    client.send(1, commands.Basic.Cancel(consumer_tag="first"))
    client.publish(1, b"3", "q")
    assert "second" in [d.consumer_tag for d, _, _ in client.deliveries()]


def test_basic_get_on_a_single_active_consumer_classic_queue_is_allowed() -> None:
    client = TimedClient()
    client.declare("q", **{"x-single-active-consumer": True})
    client.publish(1, b"x", "q")
    got = client.get("q")
    assert got is not None


def test_basic_get_on_a_single_active_consumer_quorum_queue_is_405() -> None:
    client = TimedClient()
    client.declare("q", durable=True, **{"x-queue-type": "quorum", "x-single-active-consumer": True})
    client.send(1, commands.Basic.Get(queue="q"))
    assert close_of(client.received()) == (
        1,
        405,
        "RESOURCE_LOCKED - cannot obtain access to locked queue 'q' in vhost '/'. basic.get operations "
        "are not supported by quorum queues with single active consumer",
    )


@pytest.mark.parametrize(
    ("name", "durable", "exclusive", "auto_delete", "arguments", "text"),
    [
        (
            "qq",
            False,
            False,
            False,
            {"x-queue-type": "quorum"},
            "invalid property 'non-durable' for queue 'qq' in vhost '/'",
        ),
        (
            "qq",
            True,
            True,
            False,
            {"x-queue-type": "quorum"},
            "invalid property 'exclusive-owner' for queue 'qq' in vhost '/'",
        ),
        (
            "qq",
            True,
            False,
            True,
            {"x-queue-type": "quorum"},
            "invalid property 'auto-delete' for queue 'qq' in vhost '/'",
        ),
        (
            "",
            True,
            False,
            False,
            {"x-queue-type": "quorum"},
            "Cannot declare a server-named queue for type rabbit_quorum_queue",
        ),
        (
            "qq",
            True,
            False,
            False,
            {"x-queue-type": "quorum", "x-max-priority": 5},
            "invalid arg 'x-max-priority' for queue 'qq' in vhost '/' of queue type rabbit_quorum_queue",
        ),
        (
            "st",
            False,
            False,
            False,
            {"x-queue-type": "stream"},
            "invalid property 'non-durable' for queue 'st' in vhost '/'",
        ),
        (
            "st",
            True,
            False,
            False,
            {"x-queue-type": "stream", "x-max-length": 5},
            "invalid arg 'x-max-length' for queue 'st' in vhost '/' of queue type rabbit_stream_queue",
        ),
        (
            "q",
            False,
            False,
            False,
            {"x-queue-type": "foo"},
            "invalid arg 'x-queue-type' for queue 'q' in vhost '/': \"unsupported queue type 'foo'\"",
        ),
        (
            "q",
            False,
            False,
            False,
            {"x-delivery-limit": 3},
            "invalid arg 'x-delivery-limit' for queue 'q' in vhost '/' of queue type rabbit_classic_queue",
        ),
        (
            "q",
            False,
            False,
            False,
            {"x-max-priority": 256},
            "invalid arg 'x-max-priority' for queue 'q' in vhost '/': {max_value_exceeded,256}",
        ),
        (
            "q",
            False,
            False,
            False,
            {"x-expires": 0},
            "invalid arg 'x-expires' for queue 'q' in vhost '/': {value_zero,0}",
        ),
        (
            "q",
            False,
            False,
            False,
            {"x-overflow": "foo"},
            "invalid arg 'x-overflow' for queue 'q' in vhost '/': invalid_overflow",
        ),
        (
            "q",
            False,
            False,
            False,
            {"x-dead-letter-routing-key": "k"},
            "invalid arg 'x-dead-letter-routing-key' for queue 'q' in vhost '/': "
            "routing_key_but_no_dlx_defined",
        ),
        (
            "q",
            False,
            False,
            False,
            {"x-dead-letter-exchange": 5},
            "invalid type 'signedint' for arg 'x-dead-letter-exchange' in queue 'q' in vhost '/'",
        ),
        (
            "q",
            False,
            False,
            False,
            {"x-single-active-consumer": "yes"},
            "invalid arg 'x-single-active-consumer' for queue 'q' in vhost '/': {unacceptable_type,longstr}",
        ),
        (
            "q",
            False,
            False,
            False,
            {"x-max-priority": "x"},
            "invalid arg 'x-max-priority' for queue 'q' in vhost '/': \"expected integer, got longstr\"",
        ),
        (
            "q",
            False,
            False,
            False,
            {"x-queue-mode": "bogus"},
            "invalid arg 'x-queue-mode' for queue 'q' in vhost '/': \"unsupported queue mode 'bogus'\"",
        ),
    ],
)
def test_queue_declare_argument_errors_match_rabbitmq(
    name: str, durable: bool, exclusive: bool, auto_delete: bool, arguments: dict[str, Any], text: str
) -> None:
    client = TimedClient()
    client.send(
        1,
        commands.Queue.Declare(
            queue=name, durable=durable, exclusive=exclusive, auto_delete=auto_delete, arguments=arguments
        ),
    )
    assert close_of(client.received()) == (1, 406, f"PRECONDITION_FAILED - {text}")


@pytest.mark.parametrize(
    "arguments",
    [
        {"x-queue-type": "quorum", "x-delivery-limit": 3},
        {"x-queue-type": "stream", "x-max-age": "1D"},
        {"x-queue-type": "classic", "x-queue-mode": "lazy"},
        {"x-max-priority": 0},
    ],
)
def test_valid_declarations_are_accepted(arguments: dict[str, Any]) -> None:
    client = TimedClient()
    client.declare("q", durable=True, **arguments)


def test_quorum_delivery_limit_dead_letters_and_counts_deliveries() -> None:
    client = TimedClient()
    client.declare("dead")
    client.declare(
        "qq",
        durable=True,
        **{
            "x-queue-type": "quorum",
            "x-delivery-limit": 1,
            "x-dead-letter-exchange": "",
            "x-dead-letter-routing-key": "dead",
        },
    )
    client.publish(1, b"m", "qq")
    client.send(1, commands.Basic.Consume(queue="qq", consumer_tag="c"))
    first = client.deliveries()
    assert "x-delivery-count" not in (first[0][1].headers or {})
    client.send(1, commands.Basic.Nack(delivery_tag=first[0][0].delivery_tag, requeue=True))
    second = client.deliveries()
    assert second[0][1].headers["x-delivery-count"] == 1
    client.send(1, commands.Basic.Nack(delivery_tag=second[0][0].delivery_tag, requeue=True))
    assert client.deliveries() == []
    got = client.get("dead")
    assert got is not None
    assert got[1].headers["x-death"][0]["reason"] == "delivery_limit"


def test_quorum_basic_get_always_carries_x_delivery_count() -> None:
    client = TimedClient()
    client.declare("qq", durable=True, **{"x-queue-type": "quorum"})
    client.publish(1, b"m", "qq")
    got = client.get("qq")
    assert got is not None
    assert got[1].headers == {"x-delivery-count": 0}
