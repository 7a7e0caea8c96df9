"""Clock control from tests: TTL and queue expiry move with advance_clock, with no sleeps."""

from __future__ import annotations

import asyncio

import pika
import pytest

from broker.testing.embed import BrokerThread, EmbeddedBroker


def test_message_ttl_expires_only_when_the_test_advances_the_clock() -> None:
    with BrokerThread(manual_clock=True) as broker:
        connection = pika.BlockingConnection(pika.URLParameters(broker.url))
        channel = connection.channel()
        channel.queue_declare("ttl", arguments={"x-message-ttl": 5_000})
        channel.confirm_delivery()
        channel.basic_publish("", "ttl", b"soon stale")
        handle = broker.vhost("/", create=False)
        handle.settle()
        assert handle.queue("ttl").messages_ready == 1
        broker.advance_clock(4.9)
        assert handle.queue("ttl").messages_ready == 1
        broker.advance_clock(0.2)
        handle.settle()
        assert channel.basic_get("ttl", auto_ack=True) == (None, None, None)
        # The cause, then the outcome: with no dead-letter exchange an expired message is dropped.
        assert [record.fates("ttl") for record in handle.history(queue="ttl")] == [["expired", "dropped"]]
        connection.close()


def test_queue_expiry_deletes_an_unused_queue_at_the_deadline() -> None:
    with BrokerThread(manual_clock=True) as broker:
        connection = pika.BlockingConnection(pika.URLParameters(broker.url))
        connection.channel().queue_declare("short-lived", arguments={"x-expires": 10_000})
        handle = broker.vhost("/", create=False)
        handle.settle()
        broker.advance_clock(9.0)
        assert handle.queue("short-lived").consumers == 0
        broker.advance_clock(1.5)
        with pytest.raises(LookupError):
            handle.queue("short-lived")
        connection.close()


def test_embedded_broker_on_the_real_clock_refuses_to_advance() -> None:
    async def scenario() -> None:
        async with EmbeddedBroker() as broker:
            with pytest.raises(RuntimeError, match="manual_clock=True"):
                broker.advance_clock(1)

    asyncio.run(scenario())
