"""aio-pika (and aiormq underneath): the asyncio client most services use."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import aio_pika
import aio_pika.abc
import aiormq
import aiormq.exceptions
import pytest
from pamqp import commands

TIMEOUT_S = 5.0


@pytest.fixture
async def aconnection(amqp_url: str) -> AsyncIterator[aio_pika.abc.AbstractConnection]:
    connection = await aio_pika.connect(amqp_url, timeout=TIMEOUT_S)
    try:
        yield connection
    finally:
        await connection.close()


async def test_publish_consume_ack_with_confirms(aconnection: aio_pika.abc.AbstractConnection) -> None:
    channel = await aconnection.channel(publisher_confirms=True)
    queue = await channel.declare_queue("", exclusive=True)
    assert queue.name.startswith("amq.gen-")
    for i in range(5):
        confirmation = await channel.default_exchange.publish(
            aio_pika.Message(f"m{i}".encode(), content_type="text/plain"), routing_key=queue.name
        )
        assert isinstance(confirmation, commands.Basic.Ack)
    bodies = []
    async with queue.iterator(timeout=TIMEOUT_S) as messages:
        async for message in messages:
            async with message.process():
                bodies.append(message.body)
                assert message.content_type == "text/plain"
                assert message.redelivered is False
            if len(bodies) == 5:
                break
    assert bodies == [f"m{i}".encode() for i in range(5)]
    declared = await channel.declare_queue(queue.name, passive=True)
    assert declared.declaration_result.message_count == 0


async def test_topic_exchange_routing(aconnection: aio_pika.abc.AbstractConnection, unique: str) -> None:
    channel = await aconnection.channel(publisher_confirms=True)
    exchange = await channel.declare_exchange(
        f"{unique}-topic", aio_pika.ExchangeType.TOPIC, auto_delete=True
    )
    kern = await channel.declare_queue("", exclusive=True)
    crit = await channel.declare_queue("", exclusive=True)
    await kern.bind(exchange, "kern.*")
    await crit.bind(exchange, "*.critical")
    for key in ("kern.critical", "kern.info", "user.critical", "user.info"):
        await exchange.publish(aio_pika.Message(key.encode()), routing_key=key)

    async def drain(queue: aio_pika.abc.AbstractQueue) -> list[bytes]:
        out = []
        while (message := await queue.get(no_ack=True, fail=False, timeout=TIMEOUT_S)) is not None:
            out.append(message.body)
        return out

    assert await drain(kern) == [b"kern.critical", b"kern.info"]
    assert await drain(crit) == [b"kern.critical", b"user.critical"]


async def test_passive_declare_of_missing_queue_raises_404(
    aconnection: aio_pika.abc.AbstractConnection, unique: str
) -> None:
    channel = await aconnection.channel()
    with pytest.raises(aiormq.exceptions.ChannelNotFoundEntity) as excinfo:
        await channel.declare_queue(f"{unique}-missing", passive=True)
    assert excinfo.value.args[0] == f"NOT_FOUND - no queue '{unique}-missing' in vhost '/'"
    assert not aconnection.is_closed


async def test_inequivalent_exchange_raises_406(
    aconnection: aio_pika.abc.AbstractConnection, unique: str
) -> None:
    channel = await aconnection.channel()
    name = f"{unique}-x"
    await channel.declare_exchange(name, aio_pika.ExchangeType.DIRECT, auto_delete=True)
    other = await aconnection.channel()
    with pytest.raises(aiormq.exceptions.ChannelPreconditionFailed) as excinfo:
        await other.declare_exchange(name, aio_pika.ExchangeType.FANOUT, auto_delete=True)
    assert excinfo.value.args[0] == (
        f"PRECONDITION_FAILED - inequivalent arg 'type' for exchange '{name}' in vhost '/': "
        "received 'fanout' but current is 'direct'"
    )
    await channel.exchange_delete(name)


async def test_nack_requeue_redelivers(aconnection: aio_pika.abc.AbstractConnection) -> None:
    channel = await aconnection.channel(publisher_confirms=True)
    queue = await channel.declare_queue("", exclusive=True)
    await channel.default_exchange.publish(aio_pika.Message(b"again"), routing_key=queue.name)
    first = await queue.get(timeout=TIMEOUT_S)
    assert first is not None
    await first.nack(requeue=True)
    second = await queue.get(timeout=TIMEOUT_S)
    assert second is not None
    assert (second.body, second.redelivered) == (b"again", True)
    await second.ack()


async def test_qos_limits_unacked_deliveries(aconnection: aio_pika.abc.AbstractConnection) -> None:
    channel = await aconnection.channel(publisher_confirms=True)
    await channel.set_qos(prefetch_count=2)
    queue = await channel.declare_queue("", exclusive=True)
    for i in range(6):
        await channel.default_exchange.publish(aio_pika.Message(f"m{i}".encode()), routing_key=queue.name)
    received: asyncio.Queue[aio_pika.abc.AbstractIncomingMessage] = asyncio.Queue()
    await queue.consume(received.put)
    first = [await asyncio.wait_for(received.get(), TIMEOUT_S) for _ in range(2)]
    await asyncio.sleep(0.3)  # give the broker the chance to (wrongly) push a third
    assert received.qsize() == 0
    await first[0].ack()
    third = await asyncio.wait_for(received.get(), TIMEOUT_S)
    assert third.body == b"m2"


async def test_rpc_with_reply_to_and_correlation_id(aconnection: aio_pika.abc.AbstractConnection) -> None:
    channel = await aconnection.channel()
    requests = await channel.declare_queue("", exclusive=True)
    replies = await channel.declare_queue("", exclusive=True)

    async def server(message: aio_pika.abc.AbstractIncomingMessage) -> None:
        async with message.process():
            assert message.reply_to is not None
            await channel.default_exchange.publish(
                aio_pika.Message(message.body.upper(), correlation_id=message.correlation_id),
                routing_key=message.reply_to,
            )

    await requests.consume(server)
    await channel.default_exchange.publish(
        aio_pika.Message(b"ping", reply_to=replies.name, correlation_id="c-1"), routing_key=requests.name
    )
    async with replies.iterator(timeout=TIMEOUT_S) as messages:
        async for reply in messages:
            await reply.ack()
            assert (reply.body, reply.correlation_id) == (b"PING", "c-1")
            break


async def test_transaction_commit_and_rollback(aconnection: aio_pika.abc.AbstractConnection) -> None:
    channel = await aconnection.channel(publisher_confirms=False)
    queue = await channel.declare_queue("", exclusive=True)
    tx = channel.transaction()
    await tx.select()
    await channel.default_exchange.publish(aio_pika.Message(b"rolled back"), routing_key=queue.name)
    await tx.rollback()
    await channel.default_exchange.publish(aio_pika.Message(b"committed"), routing_key=queue.name)
    await tx.commit()
    message = await queue.get(no_ack=True, timeout=TIMEOUT_S)
    assert message is not None
    assert message.body == b"committed"
    assert await queue.get(no_ack=True, fail=False, timeout=TIMEOUT_S) is None


async def test_server_cancel_reaches_aiormq(amqp_url: str) -> None:
    connection = await aiormq.connect(amqp_url)
    try:
        channel = await connection.channel()
        assert isinstance(channel, aiormq.Channel)
        declare = await channel.queue_declare("", exclusive=True)
        assert declare.queue is not None
        consume_ok = await channel.basic_consume(declare.queue, lambda _message: asyncio.sleep(0))
        other = await connection.channel()
        await other.queue_delete(declare.queue)
        deadline = asyncio.get_running_loop().time() + TIMEOUT_S
        while consume_ok.consumer_tag in channel.consumers:
            assert asyncio.get_running_loop().time() < deadline, "no server-sent basic.cancel"
            await asyncio.sleep(0.01)
        assert not channel.is_closed
    finally:
        await connection.close()


async def test_immediate_flag_through_aiormq_is_540(amqp_url: str) -> None:
    connection = await aiormq.connect(amqp_url)
    channel = await connection.channel()
    declare = await channel.queue_declare("", exclusive=True)
    assert declare.queue is not None
    with pytest.raises(aiormq.exceptions.ConnectionNotImplemented) as excinfo:
        await asyncio.wait_for(
            channel.basic_publish(b"now", routing_key=declare.queue, immediate=True), TIMEOUT_S
        )
    assert excinfo.value.args == ("NOT_IMPLEMENTED - immediate=true",)
    assert connection.is_closed
