"""basic.publish and basic.get: mandatory returns, message properties round-tripped, get-ok fields."""

from __future__ import annotations

from typing import Any

import pika
import pika.exceptions

from .kit import Ctx, Observation, bodies, confirming_queue, outcome, pump, pump_for, scenario


@scenario
def mandatory_returns(ctx: Ctx) -> Observation:
    connection = ctx.connect()
    ch = connection.channel()
    returned: list[Any] = []

    def on_return(_ch: Any, method: Any, props: Any, body: bytes) -> None:
        returned.append(
            [
                method.reply_code,
                method.reply_text,
                method.exchange,
                method.routing_key,
                body.decode(),
                props.headers,
            ]
        )

    ch.add_on_return_callback(on_return)
    q = ctx.queue(ch)
    ch.basic_publish("amq.direct", ctx.name("nobody"), b"r1", mandatory=True)
    ch.basic_publish(
        "", ctx.name("no-queue"), b"r2", mandatory=True, properties=pika.BasicProperties(headers={"h": 1})
    )
    ch.basic_publish("", q, b"routed", mandatory=True)
    ch.basic_publish("amq.direct", ctx.name("nobody"), b"not-mandatory")
    pump(connection, lambda: len(returned) >= 2)
    pump_for(connection, 0.1)
    confirm_ch = connection.channel()
    confirm_ch.confirm_delivery()
    unroutable = outcome(lambda: confirm_ch.basic_publish("amq.direct", ctx.name("x"), b"r3", mandatory=True))
    routable = outcome(lambda: confirm_ch.basic_publish("", q, b"ok", mandatory=True))
    dropped = outcome(lambda: confirm_ch.basic_publish("amq.direct", ctx.name("x"), b"dropped"))
    return {"returned": returned, "confirm": [unroutable, routable, dropped], "queue": bodies(ch, q)}


@scenario
def basic_get_sequence(ctx: Ctx) -> Observation:
    connection = ctx.connect()
    ch, q = confirming_queue(ctx, connection, 3)
    out: list[Observation] = []
    for _ in range(4):
        method, props, body = ch.basic_get(q)
        if method is None:
            out.append("empty")
        else:
            fields = [method.delivery_tag, method.redelivered, method.exchange, method.routing_key == q]
            out.append([*fields, method.message_count, body.decode(), props.content_type])
    out.append(outcome(lambda: connection.channel().basic_get(ctx.name("missing"))))
    return out


@scenario
def properties_round_trip(ctx: Ctx) -> Observation:
    connection = ctx.connect()
    ch, q = confirming_queue(ctx, connection)
    props = pika.BasicProperties(
        content_type="application/json",
        content_encoding="utf-8",
        headers={
            "s": "x",
            "i": 7,
            "neg": -1,
            "big": 2**40,
            "b": True,
            "n": None,
            "l": [1, "a"],
            "t": {"k": "v"},
        },
        delivery_mode=2,
        priority=3,
        correlation_id="c",
        reply_to="r",
        expiration="60000",
        message_id="m",
        timestamp=1_700_000_000,
        type="t",
        user_id="guest",
        app_id="a",
    )
    ch.basic_publish("", q, b"body", properties=props)
    ch.basic_publish("", q, b"")
    out = []
    for _ in range(2):
        _method, got, body = ch.basic_get(q, auto_ack=True)
        out.append([body.decode(), dict(sorted(vars(got).items()))])
    bad = connection.channel()
    bad.confirm_delivery()
    out.append(
        outcome(lambda: bad.basic_publish("", q, b"x", properties=pika.BasicProperties(expiration="abc")))
    )
    bad = connection.channel()
    bad.confirm_delivery()
    out.append(
        outcome(lambda: bad.basic_publish("", q, b"x", properties=pika.BasicProperties(user_id="mallory")))
    )
    return out
