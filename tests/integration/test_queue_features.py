"""Queue features and RPC through real clients: dead-lettering, limits and confirms, priorities, TTL 0,
direct reply-to (pika and aio-pika), CC/BCC, quorum declarations (kombu)."""

# kombu ships py.typed but most of its API is unannotated.
# mypy: disable-error-code="no-untyped-call"

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import aio_pika
import pika
import pika.exceptions
import pytest
from kombu.connection import Connection
from kombu.entity import Queue as KombuQueue

from .conftest import ConnectFactory

TIMEOUT_S = 5.0


def _get(channel: Any, queue: str) -> tuple[Any, Any, bytes]:
    method, properties, body = channel.basic_get(queue, auto_ack=True)
    assert method is not None, f"queue {queue} is empty"
    return method, properties, body


def test_rejected_message_is_dead_lettered_with_x_death(channel: Any, unique: str) -> None:
    dlx, dead, src = f"{unique}-dlx", f"{unique}-dead", f"{unique}-src"
    channel.exchange_declare(dlx, "fanout", auto_delete=True)
    channel.queue_declare(dead, auto_delete=True)
    channel.queue_bind(dead, dlx)
    channel.queue_declare(src, auto_delete=True, arguments={"x-dead-letter-exchange": dlx})
    channel.basic_publish("", src, b"m", pika.BasicProperties(expiration="60000"))
    method, _, _ = channel.basic_get(src)
    channel.basic_reject(method.delivery_tag, requeue=False)
    deliver, props, body = _get(channel, dead)
    assert (deliver.exchange, deliver.routing_key, body, props.expiration) == (dlx, src, b"m", None)
    (death,) = props.headers["x-death"]
    assert {k: v for k, v in death.items() if k != "time"} == {
        "original-expiration": "60000",
        "count": 1,
        "reason": "rejected",
        "queue": src,
        "exchange": "",
        "routing-keys": [src],
    }
    assert props.headers["x-first-death-reason"] == "rejected"


def test_ttl_zero_expires_into_the_dead_letter_queue(channel: Any, unique: str) -> None:
    dead, src = f"{unique}-dead", f"{unique}-src"
    channel.queue_declare(dead, auto_delete=True)
    channel.queue_declare(
        src,
        auto_delete=True,
        arguments={"x-message-ttl": 0, "x-dead-letter-exchange": "", "x-dead-letter-routing-key": dead},
    )
    channel.basic_publish("", src, b"late")
    _, props, body = _get(channel, dead)
    assert body == b"late"
    assert props.headers["x-death"][0]["reason"] == "expired"


def test_reject_publish_overflow_nacks_a_confirming_publisher(channel: Any, unique: str) -> None:
    queue = f"{unique}-bounded"
    channel.queue_declare(
        queue, auto_delete=True, arguments={"x-max-length": 1, "x-overflow": "reject-publish"}
    )
    channel.confirm_delivery()
    channel.basic_publish("", queue, b"first")
    with pytest.raises(pika.exceptions.NackError):
        channel.basic_publish("", queue, b"second")
    assert _get(channel, queue)[2] == b"first"


def test_priority_queue_delivers_highest_first(channel: Any, unique: str) -> None:
    queue = f"{unique}-prio"
    channel.queue_declare(queue, auto_delete=True, arguments={"x-max-priority": 10})
    for body, priority in ((b"low", 1), (b"high", 9), (b"mid", 5)):
        channel.basic_publish("", queue, body, pika.BasicProperties(priority=priority))
    assert [_get(channel, queue)[2] for _ in range(3)] == [b"high", b"mid", b"low"]


def test_cc_and_bcc_route_copies_and_bcc_is_removed(channel: Any, unique: str) -> None:
    a, b, c = (f"{unique}-{n}" for n in "abc")
    for name in (a, b, c):
        channel.queue_declare(name, auto_delete=True)
    channel.basic_publish("", a, b"x", pika.BasicProperties(headers={"CC": [b], "BCC": [c]}))
    headers = [_get(channel, name)[1].headers for name in (a, b, c)]
    assert headers == [{"CC": [b]}] * 3


def test_direct_reply_to_rpc_with_pika(connect: ConnectFactory, unique: str) -> None:
    server_conn, client_conn = connect(), connect()
    server, client = server_conn.channel(), client_conn.channel()
    rpc_queue = f"{unique}-rpc"
    server.queue_declare(rpc_queue, auto_delete=True)
    replies: list[bytes] = []
    client.basic_consume(
        "amq.rabbitmq.reply-to", lambda _c, _m, _p, body: replies.append(body), auto_ack=True
    )
    client.basic_publish("", rpc_queue, b"ping", pika.BasicProperties(reply_to="amq.rabbitmq.reply-to"))
    _, props, body = _get(server, rpc_queue)
    assert props.reply_to.startswith("amq.rabbitmq.reply-to.")
    server.basic_publish("", props.reply_to, body + b"-pong")
    client_conn.process_data_events(time_limit=0)
    deadline = 50
    while not replies and deadline:
        client_conn.process_data_events(time_limit=0.1)
        deadline -= 1
    assert replies == [b"ping-pong"]


def test_direct_reply_to_requires_no_ack(connection: pika.BlockingConnection) -> None:
    channel = connection.channel()
    with pytest.raises(pika.exceptions.ChannelClosedByBroker) as closed:
        channel.basic_consume("amq.rabbitmq.reply-to", lambda *_: None, auto_ack=False)
    assert closed.value.args == (406, "PRECONDITION_FAILED - reply consumer cannot acknowledge")


async def test_direct_reply_to_rpc_with_aio_pika(amqp_url: str, unique: str) -> None:
    connection = await aio_pika.connect(amqp_url, timeout=TIMEOUT_S)
    try:
        channel = await connection.channel()
        rpc = await channel.declare_queue(f"{unique}-arpc", auto_delete=True)

        async def serve(message: aio_pika.abc.AbstractIncomingMessage) -> None:
            async with message.process():
                assert message.reply_to is not None
                await channel.default_exchange.publish(
                    aio_pika.Message(message.body.upper(), correlation_id=message.correlation_id),
                    routing_key=message.reply_to,
                )

        await rpc.consume(serve)
        reply_queue = await channel.get_queue("amq.rabbitmq.reply-to", ensure=False)
        answers: list[bytes] = []
        done = asyncio.Event()

        async def on_reply(message: aio_pika.abc.AbstractIncomingMessage) -> None:
            answers.append(message.body)
            done.set()

        await reply_queue.consume(on_reply, no_ack=True)
        await channel.default_exchange.publish(
            aio_pika.Message(b"hello", reply_to="amq.rabbitmq.reply-to", correlation_id=str(uuid.uuid4())),
            routing_key=rpc.name,
        )
        await asyncio.wait_for(done.wait(), TIMEOUT_S)
        assert answers == [b"HELLO"]
    finally:
        await connection.close()


def test_kombu_declares_quorum_queue_and_reads_x_delivery_count(amqp_url: str, unique: str) -> None:
    with Connection(amqp_url, connect_timeout=TIMEOUT_S) as connection:
        channel = connection.default_channel
        queue = KombuQueue(f"{unique}-qq", durable=True, queue_arguments={"x-queue-type": "quorum"})(channel)
        queue.declare()
        try:
            connection.Producer(channel).publish({"n": 1}, routing_key=queue.name, serializer="json")
            message = queue.get(no_ack=False)
            assert message is not None
            assert message.payload == {"n": 1}
            assert message.headers.get("x-delivery-count") == 0
            message.ack()
        finally:
            queue.delete()


def test_plugin_exchanges_with_pika(connection: pika.BlockingConnection, unique: str) -> None:
    channel = connection.channel()
    hashed = f"{unique}-hash"
    channel.exchange_declare(hashed, "x-consistent-hash", auto_delete=True)
    queues = [f"{unique}-h{n}" for n in range(2)]
    for queue in queues:
        channel.queue_declare(queue, auto_delete=True)
        channel.queue_bind(queue, hashed, "5")
    for _ in range(3):
        channel.basic_publish(hashed, "order-42", b"o")
    counts = sorted(channel.queue_declare(q, passive=True).method.message_count for q in queues)
    assert counts == [0, 3]

    delayed = f"{unique}-delayed"
    channel.exchange_declare(
        delayed, "x-delayed-message", auto_delete=True, arguments={"x-delayed-type": "direct"}
    )
    target = f"{unique}-later"
    channel.queue_declare(target, auto_delete=True)
    channel.queue_bind(target, delayed, "k")
    got: list[bytes] = []
    channel.basic_consume(target, lambda _c, _m, _p, body: got.append(body), auto_ack=True)
    channel.basic_publish(delayed, "k", b"soon", pika.BasicProperties(headers={"x-delay": 50}))
    assert got == []  # held, not routed at publish time
    for _ in range(100):  # deadline-bounded event wait, not a sleep: returns as soon as it is delivered
        if got:
            break
        connection.process_data_events(time_limit=0.05)
    assert got == [b"soon"]
