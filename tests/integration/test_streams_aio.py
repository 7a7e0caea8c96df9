"""Stream queues with aio-pika: every x-stream-offset spec (first, last, next, an integer, a timestamp, an
interval) with the x-stream-offset header, filtering, and the refusals (basic.get, nack) as RabbitMQ answers
them. The pika side and the differential scenarios are in test_streams.py and tests/compat."""

from __future__ import annotations

import asyncio
import datetime
import uuid
from typing import Any

import aio_pika
import aiormq.exceptions
import pytest

TIMEOUT_S = 5.0
STREAM: dict[str, Any] = {"x-queue-type": "stream"}


async def _stream(channel: aio_pika.abc.AbstractChannel, bodies: list[str]) -> aio_pika.abc.AbstractQueue:
    queue = await channel.declare_queue(f"aio-stream-{uuid.uuid4().hex[:8]}", durable=True, arguments=STREAM)
    for body in bodies:
        await channel.default_exchange.publish(aio_pika.Message(body.encode()), routing_key=queue.name)
    return queue


async def _read(
    queue: aio_pika.abc.AbstractQueue, arguments: dict[str, Any], count: int
) -> list[tuple[str, int]]:
    """(body, x-stream-offset) of the first ``count`` deliveries, each acked."""
    seen: list[tuple[str, int]] = []
    async with queue.iterator(arguments=arguments, timeout=TIMEOUT_S) as messages:
        async for message in messages:
            await message.ack()
            offset = message.headers["x-stream-offset"]
            assert isinstance(offset, int)
            seen.append((message.body.decode(), offset))
            if len(seen) == count:
                break
    return seen


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("first", [0, 1, 2, 3]),
        ("last", [3]),
        (2, [2, 3]),
        (datetime.datetime.now(datetime.UTC) - datetime.timedelta(hours=1), [0, 1, 2, 3]),
        ("1h", [0, 1, 2, 3]),
    ],
    ids=["first", "last", "integer", "timestamp", "interval"],
)
async def test_each_offset_spec_starts_where_rabbitmq_starts(
    amqp_url: str, spec: Any, expected: list[int]
) -> None:
    connection = await aio_pika.connect(amqp_url, timeout=TIMEOUT_S)
    async with connection:
        channel = await connection.channel(publisher_confirms=True)
        await channel.set_qos(prefetch_count=2)
        queue = await _stream(channel, [f"m{i}" for i in range(4)])
        assert await _read(queue, {"x-stream-offset": spec}, len(expected)) == [
            (f"m{i}", i) for i in expected
        ]
        await queue.delete(if_unused=False, if_empty=False)


async def test_next_delivers_only_what_is_appended_after_the_consumer_attached(amqp_url: str) -> None:
    connection = await aio_pika.connect(amqp_url, timeout=TIMEOUT_S)
    async with connection:
        channel = await connection.channel(publisher_confirms=True)
        await channel.set_qos(prefetch_count=5)
        queue = await _stream(channel, ["old0", "old1"])
        seen: list[tuple[str, int]] = []
        got_two = asyncio.Event()

        async def on_message(message: aio_pika.abc.AbstractIncomingMessage) -> None:
            await message.ack()
            seen.append((message.body.decode(), message.headers["x-stream-offset"]))  # type: ignore[arg-type]
            if len(seen) == 2:
                got_two.set()

        await queue.consume(on_message, arguments={"x-stream-offset": "next"})
        for body in ("new2", "new3"):
            await channel.default_exchange.publish(aio_pika.Message(body.encode()), routing_key=queue.name)
        await asyncio.wait_for(got_two.wait(), TIMEOUT_S)
        assert seen == [("new2", 2), ("new3", 3)]
        await queue.delete(if_unused=False, if_empty=False)


async def test_filtering_with_aio_pika(amqp_url: str) -> None:
    """RabbitMQ 3.13 stream filtering (the 3.10 oracle has none)."""
    connection = await aio_pika.connect(amqp_url, timeout=TIMEOUT_S)
    async with connection:
        channel = await connection.channel(publisher_confirms=True)
        await channel.set_qos(prefetch_count=1)
        queue = await channel.declare_queue(
            f"aio-filter-{uuid.uuid4().hex[:8]}", durable=True, arguments=STREAM
        )
        for body, value in (("ca", "california"), ("tx", "texas"), ("plain", None), ("ca2", "california")):
            headers: dict[str, Any] = {} if value is None else {"x-stream-filter-value": value}
            await channel.default_exchange.publish(
                aio_pika.Message(body.encode(), headers=headers), routing_key=queue.name
            )
        wanted = {"x-stream-offset": "first", "x-stream-filter": "california"}
        assert await _read(queue, wanted, 2) == [("ca", 0), ("ca2", 3)]
        unfiltered = {**wanted, "x-stream-match-unfiltered": True}
        assert await _read(queue, unfiltered, 3) == [("ca", 0), ("plain", 2), ("ca2", 3)]
        await queue.delete(if_unused=False, if_empty=False)


async def test_basic_get_closes_the_connection_with_540(amqp_url: str) -> None:
    connection = await aio_pika.connect(amqp_url, timeout=TIMEOUT_S)
    channel = await connection.channel(publisher_confirms=True)
    queue = await _stream(channel, ["m0"])
    with pytest.raises(aiormq.exceptions.ConnectionNotImplemented) as refused:
        await queue.get(timeout=TIMEOUT_S)
    assert "basic.get not supported by stream queues" in str(refused.value)
    await connection.close()
    cleanup = await aio_pika.connect(amqp_url, timeout=TIMEOUT_S)
    async with cleanup:
        await (await cleanup.channel()).queue_delete(queue.name)


async def test_nack_with_requeue_closes_the_connection_with_540(amqp_url: str) -> None:
    connection = await aio_pika.connect(amqp_url, timeout=TIMEOUT_S)
    channel = await connection.channel(publisher_confirms=True)
    await channel.set_qos(prefetch_count=1)
    queue = await _stream(channel, ["m0"])
    closed = asyncio.get_running_loop().create_future()

    def on_close(_sender: Any, error: BaseException | None) -> None:
        if not closed.done():
            closed.set_result(error)

    connection.close_callbacks.add(on_close)

    async def on_message(message: aio_pika.abc.AbstractIncomingMessage) -> None:
        await message.nack(requeue=True)

    await queue.consume(on_message, arguments={"x-stream-offset": "first"})
    error = await asyncio.wait_for(closed, TIMEOUT_S)
    assert "basic.nack and basic.reject not supported by stream queues" in str(error)
    cleanup = await aio_pika.connect(amqp_url, timeout=TIMEOUT_S)
    async with cleanup:
        await (await cleanup.channel()).queue_delete(queue.name)
