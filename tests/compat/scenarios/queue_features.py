"""Differential scenarios for queue features: x-death, TTL 0, length limits, priorities, single active
consumer, direct reply-to, CC/BCC.

``x-last-death-*`` headers are left out of the observations: RabbitMQ writes them since 3.13 (WarrenMQ's
default profile) and the oracle is 3.10.8.
"""

from __future__ import annotations

from typing import Any

import pika
import pika.exceptions

from .kit import Ctx, Observation, bodies, outcome, polling, pump, scenario


def _message(ch: Any, queue: str) -> Observation:
    method, props, body = ch.basic_get(queue, auto_ack=True)
    if method is None:
        return None
    headers = {k: v for k, v in (props.headers or {}).items() if not k.startswith("x-last-death-")}
    for death in headers.get("x-death", []):
        death["time"] = type(death["time"]).__name__  # the clock differs; the type must not
    return {
        "exchange": method.exchange,
        "routing_key": method.routing_key,
        "redelivered": method.redelivered,
        "body": body.decode(),
        "expiration": props.expiration,
        "headers": headers,
    }


def _wait_count(ch: Any, queue: str, count: int) -> None:
    """RabbitMQ dead-letters asynchronously: wait (bounded) until ``queue`` holds ``count`` messages."""
    with polling():
        pump(ch.connection, lambda: ch.queue_declare(queue, passive=True).method.message_count >= count)


@scenario
def dead_letter_x_death(ctx: Ctx) -> Observation:
    ch = ctx.channel()
    dlx = ctx.exchange(ch, "dlx", "fanout")
    dead = ctx.queue(ch, "dead")
    ch.queue_bind(dead, dlx)
    src = ctx.queue(ch, "src", arguments={"x-dead-letter-exchange": dlx})
    keyed = ctx.queue(
        ch, "keyed", arguments={"x-dead-letter-exchange": dlx, "x-dead-letter-routing-key": "dl-key"}
    )
    ttl0 = ctx.queue(ch, "ttl0", arguments={"x-dead-letter-exchange": dlx, "x-message-ttl": 0})
    props = pika.BasicProperties(expiration="60000", headers={"CC": [ctx.name("nowhere")], "app": 7})
    ch.basic_publish("", src, b"rejected", props)
    ch.basic_publish("", keyed, b"keyed", pika.BasicProperties(headers={"CC": [ctx.name("x")]}))
    ch.basic_publish("", ttl0, b"expired")
    for queue, requeue_multiple in ((src, False), (keyed, True)):
        method, _, _ = ch.basic_get(queue)
        if requeue_multiple:
            ch.basic_nack(method.delivery_tag, multiple=True, requeue=False)
        else:
            ch.basic_reject(method.delivery_tag, requeue=False)
    _wait_count(ch, dead, 3)
    seen = []
    while (message := _message(ch, dead)) is not None:
        seen.append(message)
    return sorted(seen, key=lambda m: m["body"])


@scenario
def dead_letter_count_and_cycles(ctx: Ctx) -> Observation:
    ch = ctx.channel()
    looping = ctx.name("loop")
    # Rejections back into the same queue are allowed and counted.
    ctx.queue(ch, "loop", arguments={"x-dead-letter-exchange": "", "x-dead-letter-routing-key": looping})
    ch.basic_publish("", looping, b"m")
    for _ in range(3):
        _wait_count(ch, looping, 1)
        method, _, _ = ch.basic_get(looping)
        ch.basic_reject(method.delivery_tag, requeue=False)
    _wait_count(ch, looping, 1)
    counted = _message(ch, looping)
    # An expiry cycle with no rejection in it is dropped.
    cycle = ctx.name("cycle")
    ctx.queue(
        ch,
        "cycle",
        arguments={"x-message-ttl": 0, "x-dead-letter-exchange": "", "x-dead-letter-routing-key": cycle},
    )
    ch.basic_publish("", cycle, b"c")
    ch.queue_declare(cycle, passive=True)  # a round trip, so the expiry has happened
    return {"counted": counted, "cycle": bodies(ch, cycle)}


def _confirmed(publish: Any) -> Observation:
    try:
        return outcome(publish)
    except pika.exceptions.NackError as exc:
        return {"nacked": [m.body.decode() for m in exc.messages]}


@scenario
def length_limits_and_overflow(ctx: Ctx) -> Observation:
    ch = ctx.channel()
    drop = ctx.queue(ch, "drop", arguments={"x-max-length": 2})
    by_bytes = ctx.queue(ch, "bytes", arguments={"x-max-length-bytes": 5})
    reject = ctx.queue(ch, "reject", arguments={"x-max-length": 1, "x-overflow": "reject-publish"})
    for n in range(4):
        ch.basic_publish("", drop, f"d{n}".encode())
        ch.basic_publish("", by_bytes, f"b{n}".encode())
    confirming = ctx.channel(confirm=True)
    results = [
        _confirmed(lambda n=n: confirming.basic_publish("", reject, f"r{n}".encode())) for n in range(3)
    ]
    mandatory = _confirmed(lambda: confirming.basic_publish("", reject, b"m", mandatory=True))
    return {
        "drop-head": bodies(ch, drop),
        "bytes": bodies(ch, by_bytes),
        "reject-publish": results,
        "reject-mandatory": mandatory,
        "kept": bodies(ch, reject),
    }


@scenario
def priorities(ctx: Ctx) -> Observation:
    ch = ctx.channel()
    queue = ctx.queue(ch, "prio", arguments={"x-max-priority": 3})
    for body, priority in (("none", None), ("p1", 1), ("p9", 9), ("p3", 3), ("p1b", 1)):
        ch.basic_publish("", queue, body.encode(), pika.BasicProperties(priority=priority))
    method, _, _ = ch.basic_get(queue)
    ch.basic_nack(method.delivery_tag, requeue=True)
    return bodies(ch, queue)


@scenario
def single_active_consumer(ctx: Ctx) -> Observation:
    connection = ctx.connect()
    first, second = connection.channel(), connection.channel()
    queue = ctx.queue(first, "sac", exclusive=False, arguments={"x-single-active-consumer": True})
    got: list[str] = []
    first.basic_consume(queue, lambda _c, m, _p, b: got.append("first:" + b.decode()), auto_ack=True)
    second.basic_consume(queue, lambda _c, m, _p, b: got.append("second:" + b.decode()), auto_ack=True)
    for n in range(3):
        first.basic_publish("", queue, f"m{n}".encode())
    pump(connection, lambda: len(got) >= 3)
    first.close()
    second.basic_publish("", queue, b"after")
    pump(connection, lambda: len(got) >= 4)
    declared = second.queue_declare(queue, passive=True).method
    return {"got": got, "consumers": declared.consumer_count, "get": outcome(lambda: second.basic_get(queue))}


@scenario
def direct_reply_to(ctx: Ctx) -> Observation:
    results: dict[str, Any] = {}
    results["ack-consumer"] = outcome(
        lambda: ctx.connect().channel().basic_consume("amq.rabbitmq.reply-to", lambda *_: None)
    )
    results["no-consumer"] = outcome(
        lambda: (
            ctx.connect()
            .channel()
            .basic_publish("", "x", b"", pika.BasicProperties(reply_to="amq.rabbitmq.reply-to"))
        )
    )
    connection = ctx.connect()
    client = connection.channel()
    results["passive"] = str(client.queue_declare("amq.rabbitmq.reply-to", passive=True).method)
    replies: list[Any] = []
    client.basic_consume(
        "amq.rabbitmq.reply-to",
        lambda _c, m, p, b: replies.append([m.exchange, m.routing_key.count("."), b.decode()]),
        auto_ack=True,
    )
    results["second-consumer"] = outcome(
        lambda: client.basic_consume("amq.rabbitmq.reply-to", lambda *_: None, auto_ack=True)
    )
    client = connection.channel()
    client.basic_consume(
        "amq.rabbitmq.reply-to", lambda _c, m, p, b: replies.append(b.decode()), auto_ack=True
    )
    server = ctx.connect().channel()
    rpc = ctx.queue(server, "rpc", exclusive=False)
    client.basic_publish("", rpc, b"ping", pika.BasicProperties(reply_to="amq.rabbitmq.reply-to"))
    # The request was published on another connection without confirms: wait (bounded) until it arrived.
    _wait_count(server, rpc, 1)
    _, props, _ = server.basic_get(rpc, auto_ack=True)
    results["rewritten"] = props.reply_to.startswith("amq.rabbitmq.reply-to.")
    server.confirm_delivery()
    results["reply-mandatory"] = outcome(
        lambda: server.basic_publish("", props.reply_to, b"pong", mandatory=True)
    )
    pump(connection, lambda: len(replies) >= 1)
    results["replies"] = replies
    return results


@scenario
def cc_and_bcc(ctx: Ctx) -> Observation:
    ch = ctx.channel()
    exchange = ctx.exchange(ch, "direct")
    queues = {key: ctx.queue(ch, key) for key in ("main", "cc", "bcc")}
    for key, queue in queues.items():
        ch.queue_bind(queue, exchange, key)
    ch.basic_publish(exchange, "main", b"m", pika.BasicProperties(headers={"CC": ["cc"], "BCC": ["bcc"]}))
    return {key: _message(ch, queue) for key, queue in queues.items()}
