"""Differential scenarios for queue and consumer rules RabbitMQ enforces: a passive declare renews
x-expires; basic.get drops the expired messages it exposes at the head (declare-ok counts expired messages
until they reach the head); consumer x-priority and CC/BCC headers of the wrong type are refused.

RabbitMQ runs on the wall clock, so the expiry scenarios wait for real, with margins of several hundred
milliseconds on either side of every deadline; WarrenMQ's own tests of the same rules use the ManualClock
(tests/component/test_queue_consumer_rules.py).
"""

from __future__ import annotations

import time
from typing import Any

import pika

from .kit import Ctx, Observation, outcome, scenario


def _count(ch: Any, queue: str) -> int:
    count: int = ch.queue_declare(queue, passive=True).method.message_count
    return count


def _get(ch: Any, queue: str) -> Observation:
    method, _props, body = ch.basic_get(queue, auto_ack=True)
    return None if method is None else [body.decode(), method.message_count]


@scenario
def expired_messages_in_declare_ok_and_get_ok_counts(ctx: Ctx) -> Observation:
    ch = ctx.channel(confirm=True)  # each publish returns once the queue holds it, its TTL running
    queue = ctx.queue(ch, "q")
    for body, expiration in (("m1", None), ("m2", "50"), ("m3", None), ("m4", "50"), ("m5", "50")):
        ch.basic_publish("", queue, body.encode(), pika.BasicProperties(expiration=expiration))
    # The 50 ms TTLs must run out on RabbitMQ's wall clock (nothing to poll without taking a message): m2, m4
    # and m5 have expired behind unexpired heads.
    time.sleep(0.4)
    seen: dict[str, Observation] = {"declare-ok": _count(ch, queue)}
    seen["get 1"] = _get(ch, queue)  # exposes m2, dropped at once
    seen["declare-ok after get 1"] = _count(ch, queue)
    seen["get 2"] = _get(ch, queue)  # exposes m4 and m5
    seen["declare-ok after get 2"] = _count(ch, queue)
    return seen


@scenario
def passive_declare_renews_queue_expiry(ctx: Ctx) -> Observation:
    ch = ctx.channel()
    renewed = ctx.queue(ch, "renewed", exclusive=False, arguments={"x-expires": 2000})
    start = time.monotonic()
    # x-expires runs on RabbitMQ's wall clock, and only the queue's absence would show it: fixed times, the
    # renewal 0.8 s before the first lease ends, the check 0.6 s after it and 0.6 s before the renewed one.
    time.sleep(1.2)
    _count(ch, renewed)  # passive: the lease restarts, now due at about 3.2 s
    time.sleep(max(0.0, 2.6 - (time.monotonic() - start)))
    return {"alive at 2.6 s": outcome(lambda: _count(ctx.channel(), renewed))}


@scenario
def consumer_priority_must_be_an_integer(ctx: Ctx) -> Observation:
    def consume(value: Any) -> Observation:
        ch = ctx.channel()
        queue = ctx.queue(ch, "q")
        return outcome(lambda: ch.basic_consume(queue, lambda *_: None, arguments={"x-priority": value}))

    values: list[Any] = ["5", b"5", True, None, [1], {"a": 1}, 7, -3, 2**40]
    return {repr(value): consume(value) for value in values}


@scenario
def cc_and_bcc_headers_must_be_arrays(ctx: Ctx) -> Observation:
    def publish(headers: dict[str, Any], exchange: str = "") -> Observation:
        ch = ctx.channel(confirm=True)
        queue = ctx.queue(ch, "q")
        props = pika.BasicProperties(headers=headers)
        return outcome(lambda: ch.basic_publish(exchange, queue, b"m", props))

    cases: list[dict[str, Any]] = [
        {"BCC": "q"},
        {"CC": "q"},
        {"BCC": 5},
        {"CC": None},
        {"CC": "a", "BCC": 5},
        {"CC": ["a", 5]},
        {"BCC": [b"a"]},
    ]
    seen = {repr(headers): publish(headers) for headers in cases}
    seen["missing exchange first"] = publish({"BCC": "q"}, ctx.name("nowhere"))
    return seen
