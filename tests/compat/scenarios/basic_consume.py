"""basic.consume / basic.cancel / basic.qos: prefetch limits, round-robin, exclusive consumers,
server cancels."""

from __future__ import annotations

from typing import Any

from .kit import (
    SETTLE_S,
    Ctx,
    Deliveries,
    Observation,
    confirming_queue,
    consume_until,
    outcome,
    pump,
    pump_for,
    scenario,
    timing_dependent,
)


def _qos_run(ctx: Ctx, per_consumer: int | None, global_: int | None) -> Observation:
    connection = ctx.connect()
    ch = connection.channel()
    ch.confirm_delivery()
    queues = [ctx.queue(ch) for _ in range(2)]
    for q in queues:
        for i in range(10):
            ch.basic_publish("", q, f"m{i}".encode())
    if per_consumer is not None:
        ch.basic_qos(prefetch_count=per_consumer)
    if global_ is not None:
        ch.basic_qos(prefetch_count=global_, global_qos=True)
    seen = Deliveries()
    for i, q in enumerate(queues):
        ch.basic_consume(q, seen, consumer_tag=f"c{i}")
    pump_for(connection, SETTLE_S)
    per_tag = {tag: sum(1 for item in seen.items if item[0] == tag) for tag in ("c0", "c1")}
    total = len(seen)
    ready = [ch.queue_declare(q, passive=True).method.message_count for q in queues]
    first = seen.items[0][1]
    ch.basic_ack(first)
    pump_for(connection, SETTLE_S)
    observed: dict[str, Any] = {"total": total, "ready": sum(ready), "after-ack": len(seen)}
    if per_consumer is not None:  # with only a channel-wide limit, how it splits between consumers is timing
        observed["max-per-consumer"] = max(per_tag.values())
    return observed


def _global_qos_run(ctx: Ctx, per_consumer: int | None) -> Observation:
    # Two queues compete for one channel-wide credit: which one gets the credit an ack frees is timing on
    # RabbitMQ too (its frames are not compared; the observation counts only what does not depend on it).
    with timing_dependent():
        return _qos_run(ctx, per_consumer, 3)


@scenario
def qos_prefetch(ctx: Ctx) -> Observation:
    return {
        "per-consumer-2": _qos_run(ctx, 2, None),
        "global-3": _global_qos_run(ctx, None),
        "both-2-3": _global_qos_run(ctx, 2),
        "unlimited": _qos_run(ctx, None, None),
        "size": outcome(lambda: ctx.connect().channel().basic_qos(prefetch_size=5)),
    }


@scenario
def consumers_round_robin_and_exclusive(ctx: Ctx) -> Observation:
    connection = ctx.connect()
    ch, q = confirming_queue(ctx, connection)
    seen = Deliveries()
    for tag in ("a", "b", "c"):
        ch.basic_consume(q, seen, consumer_tag=tag, auto_ack=True)
    # Published on a channel of their own: on the consumers' channel, whether a message's confirm or its
    # delivery comes first is a race on RabbitMQ 4.0.5 (both orders seen); across channels only the step is
    # compared.
    publisher = connection.channel()
    publisher.confirm_delivery()
    for i in range(9):
        publisher.basic_publish("", q, f"m{i}".encode())
    pump(connection, lambda: len(seen) == 9)
    order = [item[0] for item in seen.items]
    results: dict[str, Any] = {
        "per-consumer": {tag: order.count(tag) for tag in "abc"},
        "periodic": order[3:] == order[:-3],
        "bodies": [item[3] for item in seen.items],
        "consumer-count": ch.queue_declare(q, passive=True).method.consumer_count,
    }
    q2 = ctx.queue(ch)
    ch.basic_consume(q2, Deliveries(), consumer_tag="x", exclusive=True)
    results["exclusive-taken"] = outcome(lambda: connection.channel().basic_consume(q2, Deliveries()))
    q3 = ctx.queue(ch)
    ch.basic_consume(q3, Deliveries(), consumer_tag="y")
    results["exclusive-when-used"] = outcome(
        lambda: connection.channel().basic_consume(q3, Deliveries(), exclusive=True)
    )
    results["same-tag-other-channel"] = outcome(
        lambda: connection.channel().basic_consume(q3, Deliveries(), consumer_tag="y")
    )
    results["consume-missing"] = outcome(
        lambda: connection.channel().basic_consume(ctx.name("nq"), Deliveries())
    )
    results["cancel-unknown"] = outcome(lambda: connection.channel().basic_cancel("nope"))
    return results


@scenario
def cancel_and_server_cancel(ctx: Ctx) -> Observation:
    connection = ctx.connect()
    ch, q = confirming_queue(ctx, connection, 2)
    seen = consume_until(connection, ch, q, 2)
    ch.basic_cancel("c")
    ch.basic_publish("", q, b"after-cancel")
    pump_for(connection, SETTLE_S)
    results: dict[str, Any] = {
        "seen": seen.items,
        "ready": ch.queue_declare(q, passive=True).method.message_count,
    }
    ch.basic_ack(2, multiple=True)
    results["ack-after-cancel"] = outcome(lambda: ch.queue_declare(q, passive=True))
    consumer_ch = connection.channel()
    cancels: list[str] = []
    consumer_ch.add_on_cancel_callback(lambda frame: cancels.append(frame.method.consumer_tag))
    consumer_ch.basic_consume(q, Deliveries(), consumer_tag="victim")
    connection.channel().queue_delete(q)
    pump(connection, lambda: len(cancels) == 1)
    results["server-cancel"] = cancels
    results["channel-open"] = consumer_ch.is_open
    return results
