"""Differential scenarios for stream queues over AMQP 0-9-1: the declare rules and argument checks, every
``x-stream-offset`` spec, the ``x-stream-offset`` delivery header, acks that only return credit, and the
operations RabbitMQ refuses on a stream (basic.get, no prefetch, auto-ack, global qos, reject/nack).

Stream filtering is RabbitMQ 3.13; the 3.10 oracle cannot check it (WarrenMQ's own tests cover it).
"""

from __future__ import annotations

import datetime
import time
from typing import Any

import pika

from .kit import Ctx, Observation, outcome, pump, pump_for, scenario

STREAM = {"x-queue-type": "stream"}


def _stream(ctx: Ctx, ch: Any, suffix: str, **extra: Any) -> str:
    return ctx.queue(ch, suffix, durable=True, exclusive=False, arguments={**STREAM, **extra})


def _declared(ctx: Ctx, connection: Any, name: str, args: dict[str, Any]) -> Observation:
    """The outcome of a durable declare of ``name`` with ``args``; a declared queue is deleted afterwards."""
    result = outcome(lambda: connection.channel().queue_declare(name, durable=True, arguments=args))
    if result == "ok" and name:
        ctx.queues.append(name)
    return result


def _timestamp(from_now_s: int) -> datetime.datetime:
    """An AMQP timestamp (pika encodes a datetime as type T) ``from_now_s`` seconds away."""
    return datetime.datetime.fromtimestamp(int(time.time()) + from_now_s)


def _publish(ch: Any, queue: str, bodies: list[str]) -> None:
    for body in bodies:
        ch.basic_publish("", queue, body.encode(), pika.BasicProperties(delivery_mode=2))


class _Seen:
    def __init__(self) -> None:
        self.items: list[list[Any]] = []

    def __call__(self, ch: Any, method: Any, props: Any, body: bytes) -> None:
        headers = props.headers or {}
        self.items.append([body.decode(), headers.get("x-stream-offset"), method.redelivered])
        ch.basic_ack(method.delivery_tag)


def _consume(ctx: Ctx, queue: str, offset: Any, expect: int, prefetch: int = 10) -> Observation:
    connection = ctx.connect()
    ch = connection.channel()
    ch.basic_qos(prefetch_count=prefetch)
    seen = _Seen()
    arguments = {} if offset is None else {"x-stream-offset": offset}
    result = outcome(lambda: ch.basic_consume(queue, seen, arguments=arguments))
    if result != "ok":
        return result
    pump(connection, lambda: len(seen.items) >= expect)
    pump_for(connection, 0.2)
    return seen.items


@scenario
def stream_declare_rules(ctx: Ctx) -> Observation:
    connection = ctx.connect()

    def declare(suffix: str, **kwargs: Any) -> Observation:
        ch = connection.channel()
        kwargs.setdefault("durable", True)
        kwargs.setdefault("exclusive", False)
        kwargs.setdefault("auto_delete", False)
        args = {**STREAM, **kwargs.pop("arguments", {})}
        name = ctx.name(suffix)
        result = outcome(lambda: ch.queue_declare(name, arguments=args, **kwargs))
        if result == "ok":
            ctx.queues.append(name)
        return result

    return {
        "durable": declare("ok"),
        "transient": declare("t", durable=False),
        "exclusive": declare("x", exclusive=True),
        "auto-delete": declare("ad", auto_delete=True),
        "server-named": outcome(
            lambda: connection.channel().queue_declare("", durable=True, arguments=STREAM)
        ),
        "all arguments": declare(
            "args",
            arguments={
                "x-max-length-bytes": 10_000_000,
                "x-max-age": "7D",
                "x-stream-max-segment-size-bytes": 500_000,
                "x-initial-cluster-size": 1,
            },
        ),
        "x-message-ttl": declare("ttl", arguments={"x-message-ttl": 1000}),
        "x-max-length": declare("ml", arguments={"x-max-length": 10}),
    }


@scenario
def stream_max_age_values(ctx: Ctx) -> Observation:
    values: list[Any] = ["7D", "12h", "30m", "10s", "1Y", "2M", "0D", "10x", "10", "h", "-1s", 10, "1.5h"]
    seen: dict[str, Observation] = {}
    for index, value in enumerate(values):
        # A fresh connection each: some values crash RabbitMQ's check and close the connection.
        args = {**STREAM, "x-max-age": value}
        seen[repr(value)] = _declared(ctx, ctx.connect(), ctx.name(f"age{index}"), args)
    return seen


@scenario
def stream_integer_arguments(ctx: Ctx) -> Observation:
    connection = ctx.connect()
    seen: dict[str, Observation] = {}
    for key in ("x-max-length-bytes", "x-stream-max-segment-size-bytes", "x-initial-cluster-size"):
        for index, value in enumerate((-1, 0, "5", 3)):
            args = {**STREAM, key: value}
            seen[f"{key}={value!r}"] = _declared(ctx, connection, ctx.name(f"{key}{index}"), args)
    return seen


@scenario
def stream_offsets(ctx: Ctx) -> Observation:
    ch = ctx.channel()
    queue = _stream(ctx, ch, "s")
    ch.confirm_delivery()
    _publish(ch, queue, [f"m{i}" for i in range(5)])
    return {
        "default": _consume(ctx, queue, None, 0),
        "first": _consume(ctx, queue, "first", 5),
        "last": _consume(ctx, queue, "last", 1),
        "next": _consume(ctx, queue, "next", 0),
        "2": _consume(ctx, queue, 2, 3),
        "0": _consume(ctx, queue, 0, 5),
        "99": _consume(ctx, queue, 99, 0),
        "-1": _consume(ctx, queue, -1, 5),
        "timestamp an hour ago": _consume(ctx, queue, _timestamp(-3600), 5),
        "interval 1h": _consume(ctx, queue, "1h", 5),
        "bad string": _consume(ctx, queue, "bogus", 5),
    }


@scenario
def stream_offset_refused_values(ctx: Ctx) -> Observation:
    ch = ctx.channel()
    queue = _stream(ctx, ch, "s")
    values: list[Any] = [True, "10x", "0s", "", "FIRST", [1]]
    return {repr(value): _consume(ctx, queue, value, 0) for value in values}


@scenario
def stream_offset_timestamp_in_future(ctx: Ctx) -> Observation:
    ch = ctx.channel()
    queue = _stream(ctx, ch, "s")
    ch.confirm_delivery()
    _publish(ch, queue, ["a", "b"])
    return _consume(ctx, queue, _timestamp(3600), 0)


def _pump_until(connection: Any, seen: _Seen, count: int) -> None:
    pump(connection, lambda: len(seen.items) >= count)
    pump_for(connection, 0.2)


@scenario
def stream_tail_consumers_receive_new_appends(ctx: Ctx) -> Observation:
    ch = ctx.channel()
    queue = _stream(ctx, ch, "s")
    ch.confirm_delivery()
    _publish(ch, queue, ["old"])
    consumers = []
    for offset in ("next", "first"):
        connection = ctx.connect()
        cch = connection.channel()
        cch.basic_qos(prefetch_count=2)
        seen = _Seen()
        cch.basic_consume(queue, seen, arguments={"x-stream-offset": offset})
        consumers.append((connection, seen))
    pump_for(consumers[0][0], 0.2)
    _publish(ch, queue, ["n1", "n2", "n3"])
    for connection, seen in consumers:
        _pump_until(connection, seen, 3)
    return [seen.items for _connection, seen in consumers]


@scenario
def stream_prefetch_limits_unacked_and_acks_return_credit(ctx: Ctx) -> Observation:
    ch = ctx.channel()
    queue = _stream(ctx, ch, "s")
    ch.confirm_delivery()
    _publish(ch, queue, [f"m{i}" for i in range(6)])
    connection = ctx.connect()
    cch = connection.channel()
    cch.basic_qos(prefetch_count=2)
    tags: list[int] = []
    cch.basic_consume(
        queue, lambda _c, m, _p, _b: tags.append(m.delivery_tag), arguments={"x-stream-offset": "first"}
    )
    pump_for(connection, 0.3)
    before = len(tags)
    cch.basic_ack(tags[-1], multiple=True)
    pump_for(connection, 0.3)
    # Not compared: declare-ok's message_count of a stream (RabbitMQ reads lagging metrics: 0 or 6).
    return {"before ack": before, "after ack": len(tags)}


@scenario
def stream_refused_operations(ctx: Ctx) -> Observation:
    ch = ctx.channel()
    queue = _stream(ctx, ch, "s")
    ch.confirm_delivery()
    _publish(ch, queue, ["m0", "m1"])

    def fresh() -> Any:
        return ctx.connect().channel()

    def consume(ch: Any, **kwargs: Any) -> None:
        ch.basic_consume(queue, lambda *_: None, **kwargs)

    def settle(kind: str, requeue: bool) -> Observation:
        connection = ctx.connect()
        cch = connection.channel()
        cch.basic_qos(prefetch_count=5)
        tags: list[int] = []
        cch.basic_consume(
            queue, lambda _c, m, _p, _b: tags.append(m.delivery_tag), arguments={"x-stream-offset": "first"}
        )
        pump(connection, lambda: len(tags) >= 2)

        def run() -> None:
            if kind == "reject":
                cch.basic_reject(tags[0], requeue=requeue)
            else:
                cch.basic_nack(tags[0], requeue=requeue)
            pump_for(connection, 0.3)
            # A round trip that shows the connection is still open (4.x) or closed (3.x). Not queue.declare:
            # a stream's declare-ok counts messages from statistics emitted every few seconds, so right after
            # publishing RabbitMQ answers 0 or the length, depending on the moment.
            cch.basic_qos(prefetch_count=5)

        return outcome(run)

    def global_qos() -> None:
        cch = fresh()
        cch.basic_qos(prefetch_count=5, global_qos=True)
        consume(cch)

    def qos_then(ch: Any) -> Any:
        ch.basic_qos(prefetch_count=5)
        return ch

    return {
        "basic.get": outcome(lambda: fresh().basic_get(queue)),
        "no prefetch": outcome(lambda: consume(fresh())),
        "auto-ack": outcome(lambda: consume(qos_then(fresh()), auto_ack=True)),
        "global qos": outcome(global_qos),
        "exclusive consumer": outcome(lambda: consume(qos_then(fresh()), exclusive=True)),
        "reject requeue": settle("reject", True),
        "reject discard": settle("reject", False),
        "nack requeue": settle("nack", True),
        "nack discard": settle("nack", False),
        "purge": outcome(lambda: fresh().queue_purge(queue)),
    }
