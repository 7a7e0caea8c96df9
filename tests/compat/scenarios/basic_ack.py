"""basic.ack / basic.nack / basic.reject / basic.recover: delivery tags, requeue order, redelivered flags."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from .kit import Ctx, Observation, confirming_queue, consume_until, drain, get_tags, outcome, pump, scenario


@scenario
def requeue_order_and_redelivered(ctx: Ctx) -> Observation:
    connection = ctx.connect()
    ch, q = confirming_queue(ctx, connection, 6)
    tags = get_tags(ch, q, 4)
    ch.basic_nack(tags[3], requeue=True)
    ch.basic_reject(tags[1], requeue=True)
    ch.basic_nack(tags[0], requeue=True)
    after_nack = drain(ch, q)
    return {"tags": tags, "after": after_nack}


@scenario
def ack_nack_multiple(ctx: Ctx) -> Observation:
    connection = ctx.connect()
    ch, q = confirming_queue(ctx, connection, 8)
    tags = get_tags(ch, q, 8)
    ch.basic_ack(2, multiple=True)  # m0 m1
    ch.basic_nack(4, multiple=True, requeue=True)  # m2 m3 back
    ch.basic_reject(5, requeue=False)  # m4 dropped
    ch.basic_nack(7, multiple=True, requeue=False)  # m5 m6 dropped; m7 left unacked
    ready = drain(ch, q)
    ch.close()
    return {"tags": tags, "ready": ready, "after-close": drain(connection.channel(), q)}


@scenario
def delivery_tag_errors(ctx: Ctx) -> Observation:
    connection = ctx.connect()
    results: dict[str, Any] = {}
    calls: list[tuple[str, Callable[[Any], object]]] = [
        ("ack-99", lambda ch: ch.basic_ack(99)),
        ("ack-99-multiple", lambda ch: ch.basic_ack(99, multiple=True)),
        ("nack-99", lambda ch: ch.basic_nack(99)),
        ("reject-99", lambda ch: ch.basic_reject(99)),
        ("ack-0", lambda ch: ch.basic_ack(0)),
        ("ack-0-multiple", lambda ch: ch.basic_ack(0, multiple=True)),
    ]
    for label, call in calls:
        ch = connection.channel()
        call(ch)
        results[label] = outcome(partial(ch.queue_declare, "", exclusive=True))
    ch, q = confirming_queue(ctx, connection, 2)
    [tag] = get_tags(ch, q, 1)
    ch.basic_ack(tag)
    ch.basic_ack(tag)
    results["double-ack"] = outcome(lambda: ch.queue_declare("", exclusive=True))
    ch2 = connection.channel()
    [tag] = get_tags(ch2, q, 1)
    other = connection.channel()
    other.basic_ack(tag)
    results["other-channel"] = outcome(lambda: other.queue_declare("", exclusive=True))
    results["requeued-after-error"] = drain(connection.channel(), q)
    ch2.close()
    results["after-owner-close"] = drain(connection.channel(), q)
    return results


@scenario
def consumer_requeue_on_close(ctx: Ctx) -> Observation:
    connection = ctx.connect()
    ch, q = confirming_queue(ctx, connection, 5)
    consumer_ch = connection.channel()
    seen = consume_until(connection, consumer_ch, q, 5)
    consumer_ch.basic_ack(2)
    consumer_ch.basic_nack(4, requeue=True)
    pump(connection, lambda: len(seen) == 6)
    consumer_ch.close()
    return {"seen": seen.items, "after-close": drain(ch, q)}


@scenario
def recover(ctx: Ctx) -> Observation:
    connection = ctx.connect()
    ch, q = confirming_queue(ctx, connection, 3)
    seen = consume_until(connection, ch, q, 3)
    ch.basic_recover(requeue=True)
    pump(connection, lambda: len(seen) == 6)
    ch.basic_cancel("c")
    get_ch, q2 = confirming_queue(ctx, connection, 3)
    get_tags(get_ch, q2, 2)
    get_ch.basic_recover(requeue=True)
    results: dict[str, Any] = {"consumer": seen.items, "get": drain(get_ch, q2)}
    results["requeue-false"] = outcome(lambda: connection.channel().basic_recover(requeue=False))
    return results
