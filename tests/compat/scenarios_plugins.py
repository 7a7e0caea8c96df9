"""Differential scenarios for the plugin exchange types: x-consistent-hash, x-modulus-hash, x-recent-history.

They need an oracle with the plugins enabled (``rabbitmq_plugins_url``), so they live in their own table,
``PLUGIN_SCENARIOS``, run by tests/compat/test_plugin_exchanges.py. Placement scenarios publish thousands of
keys and observe which queue each one landed in.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from typing import Any

import pika

from .scenarios.kit import Ctx, Observation, bodies, normalise, outcome, polling

PLUGIN_SCENARIOS: dict[str, Callable[[Ctx], Observation]] = {}


def plugin_scenario(fn: Callable[[Ctx], Observation]) -> Callable[[Ctx], Observation]:
    PLUGIN_SCENARIOS[fn.__name__] = fn
    return fn


def run_plugin_scenario(url: str, name: str, prefix: str | None = None) -> Observation:
    """Scenario ``name`` against ``url`` with unique names (``prefix``, else a fresh one); normalised."""
    prefix = prefix or f"cmp{uuid.uuid4().hex[:10]}"
    ctx = Ctx(url, prefix)
    try:
        observation = PLUGIN_SCENARIOS[name](ctx)
    finally:
        ctx.close()
    return normalise(observation, prefix)


def keys(count: int, tag: str = "") -> list[str]:
    """Routing keys of many shapes: short and long, ASCII and not, empty."""
    shapes = ["", "é", "order.42", "x" * 200, "ключ", "a b", "0", "-1"]
    return [f"{tag}k-{n}" for n in range(count)] + [f"{tag}{shape}" for shape in shapes]


def placement(ch: Any, queues: list[str]) -> dict[str, str]:
    """Which queue each message (by body) is in; the queues are drained."""
    seen: dict[str, str] = {}
    for queue in queues:
        for body in bodies(ch, queue):
            assert body not in seen, f"{body!r} reached two queues"
            seen[body] = queue
    return seen


def wait_count(ch: Any, queue: str, count: int, timeout_s: float = 5.0) -> None:
    """RabbitMQ's plugins deliver asynchronously: wait (bounded) until ``queue`` holds ``count``."""
    deadline = time.monotonic() + timeout_s
    with polling():  # the number of rounds is timing: the frame harness leaves them out
        while ch.queue_declare(queue, passive=True).method.message_count < count:
            if time.monotonic() > deadline:
                return
            time.sleep(0.01)


def publish_keys(ch: Any, exchange: str, routing_keys: list[str]) -> None:
    for key in routing_keys:
        ch.basic_publish(exchange, key, key.encode())


# ----------------------------------------------------------------------------------------------------------
# x-consistent-hash
# ----------------------------------------------------------------------------------------------------------


@plugin_scenario
def consistent_hash_places_each_routing_key(ctx: Ctx) -> Observation:
    ch = ctx.channel(confirm=True)
    x = ctx.exchange(ch, "chx", "x-consistent-hash")
    queues = []
    for n, weight in enumerate((1, 2, 3, 5, 8, 13)):
        queue = ctx.queue(ch, f"w{n}")
        ch.queue_bind(queue, x, str(weight))
        queues.append(queue)
    publish_keys(ch, x, keys(3000))
    return placement(ch, queues)


@plugin_scenario
def consistent_hash_follows_binding_changes(ctx: Ctx) -> Observation:
    """Buckets as the plugin keeps them: a rebind under another weight adds none, removing any binding of a
    destination drops all its buckets, later ones renumbered; an exchange destination takes buckets too."""
    ch = ctx.channel(confirm=True)
    x = ctx.exchange(ch, "chx", "x-consistent-hash")
    fanout = ctx.exchange(ch, "fan", "fanout")
    a, b, c, d, f = (ctx.queue(ch, name) for name in "abcdf")
    ch.queue_bind(f, fanout, "")
    for queue, weight in ((a, "3"), (b, "2"), (c, "4"), (a, "7"), (d, "1")):
        ch.queue_bind(queue, x, weight)
    ch.exchange_bind(fanout, x, "2")
    ch.queue_unbind(b, x, "2")
    publish_keys(ch, x, keys(800, "s1-"))
    stages = {"after_unbind": placement(ch, [a, b, c, d, f])}
    ch.queue_delete(c)
    ch.queue_unbind(a, x, "7")  # a keeps its "3" binding but loses every bucket
    ch.queue_bind(b, x, "5")
    publish_keys(ch, x, keys(800, "s2-"))
    stages["after_delete_and_rebind"] = placement(ch, [a, b, d, f])
    return stages


@plugin_scenario
def consistent_hash_on_properties(ctx: Ctx) -> Observation:
    ch = ctx.channel(confirm=True)
    queues = [ctx.queue(ch, f"q{n}") for n in range(3)]
    seen = {}
    for prop in ("message_id", "correlation_id", "timestamp"):
        x = ctx.exchange(ch, prop, "x-consistent-hash", arguments={"hash-property": prop})
        for queue, weight in zip(queues, (2, 3, 5), strict=True):
            ch.queue_bind(queue, x, str(weight))
        for n in range(400):
            value: Any = 1_600_000_000 + n * 7919 if prop == "timestamp" else f"id-{n}"
            ch.basic_publish(x, "same", f"{prop}-{n}".encode(), pika.BasicProperties(**{prop: value}))
        ch.basic_publish(x, "same", f"{prop}-absent".encode())  # hashed as the atom undefined
        seen[prop] = placement(ch, queues)
    return seen


@plugin_scenario
def consistent_hash_on_an_absent_header(ctx: Ctx) -> Observation:
    """An absent hash-header is hashed as the atom undefined: every such message lands in one queue."""
    ch = ctx.channel(confirm=True)
    x = ctx.exchange(ch, "chx", "x-consistent-hash", arguments={"hash-header": "user"})
    queues = [ctx.queue(ch, f"q{n}") for n in range(4)]
    for queue, weight in zip(queues, (1, 4, 2, 3), strict=True):
        ch.queue_bind(queue, x, str(weight))
    for n in range(20):
        headers = {"other": n} if n % 2 else None
        ch.basic_publish(x, f"key-{n}", f"m{n}".encode(), pika.BasicProperties(headers=headers))
    return placement(ch, queues)


@plugin_scenario
def consistent_hash_refusals(ctx: Ctx) -> Observation:
    def bind(key: str) -> Observation:
        ch = ctx.channel()
        x = ctx.exchange(ch, "chx", "x-consistent-hash")
        queue = ctx.queue(ch, "q")
        return outcome(lambda: ch.queue_bind(queue, x, key))

    def declare(arguments: dict[str, Any]) -> Observation:
        ch = ctx.channel()
        return outcome(
            lambda: ch.exchange_declare(ctx.name("args"), "x-consistent-hash", arguments=arguments)
        )

    weights = ["abc", "0", "-1", " 5", "5.0", "", "+5", "0005", "1e3", "99999999999999999999"]
    observed: dict[str, Observation] = {f"bind {k!r}": bind(k) for k in weights}
    for arguments in (
        {"hash-header": "h", "hash-property": "message_id"},
        {"hash-property": "app_id"},
        {"hash-property": "priority"},
        {"hash-property": "timestamp"},
    ):
        observed[f"declare {sorted(arguments.items())}"] = declare(arguments)
        ctx.channel().exchange_delete(ctx.name("args"))
    return observed


# ----------------------------------------------------------------------------------------------------------
# x-modulus-hash (rabbitmq_sharding)
# ----------------------------------------------------------------------------------------------------------


@plugin_scenario
def modulus_hash_places_each_routing_key(ctx: Ctx) -> Observation:
    """Bindings listed by key then destination (exchanges first), a destination bound twice listed twice."""
    ch = ctx.channel(confirm=True)
    x = ctx.exchange(ch, "mod", "x-modulus-hash")
    fanout = ctx.exchange(ch, "fan", "fanout")
    q1, q2, q3, q4, f = (ctx.queue(ch, name) for name in ("q1", "q2", "q3", "q4", "f"))
    ch.queue_bind(f, fanout, "")
    for queue, key in ((q3, "b"), (q1, "a"), (q2, "a"), (q1, "c"), (q4, ""), (q2, "zz")):
        ch.queue_bind(queue, x, key)
    ch.exchange_bind(fanout, x, "b")
    publish_keys(ch, x, keys(2000, "s1-"))
    stages = {"all": placement(ch, [q1, q2, q3, q4, f])}
    ch.queue_unbind(q1, x, "a")
    ch.queue_delete(q3)
    publish_keys(ch, x, keys(500, "s2-"))
    stages["after_unbind"] = placement(ch, [q1, q2, q4, f])
    return stages


@plugin_scenario
def hash_exchanges_with_cc_and_bcc(ctx: Ctx) -> Observation:
    """CC/BCC keys add no routes: consistent hash uses the routing key, modulus hash all keys together."""
    ch = ctx.channel(confirm=True)
    seen = {}
    for kind in ("x-consistent-hash", "x-modulus-hash"):
        x = ctx.exchange(ch, kind, kind)
        queues = [ctx.queue(ch, f"{kind}-{n}") for n in range(4)]
        for queue, weight in zip(queues, (1, 2, 3, 4), strict=True):
            ch.queue_bind(queue, x, str(weight))
        for n in range(300):
            headers: dict[str, Any] = {"CC": [f"c{n}", f"d{n}"]} if n % 3 else {"BCC": [f"b{n}"]}
            if n % 5 == 0:
                headers["BCC"] = [f"e{n}"]
            ch.basic_publish(x, f"k{n}", f"m{n}".encode(), pika.BasicProperties(headers=headers))
        seen[kind] = placement(ch, queues)
    return seen


# ----------------------------------------------------------------------------------------------------------
# x-recent-history
# ----------------------------------------------------------------------------------------------------------


def _got(ch: Any, queue: str, count: int) -> list[Observation]:
    wait_count(ch, queue, count)
    out: list[Observation] = []
    while True:
        method, props, body = ch.basic_get(queue, auto_ack=True)
        if method is None:
            return out
        out.append([body.decode(), method.exchange, method.routing_key, method.redelivered, props.headers])


@plugin_scenario
def recent_history_replays_to_new_bindings(ctx: Ctx) -> Observation:
    ch = ctx.channel(confirm=True)
    x = ctx.exchange(ch, "rh", "x-recent-history", arguments={"x-recent-history-length": 5})
    for n in range(1, 9):
        # boolean true keeps a message out of the history; false, or the string "true", does not
        no_store: dict[int, Any] = {3: True, 4: False, 5: "true"}
        headers = {"x-recent-history-no-store": no_store[n]} if n in no_store else None
        ch.basic_publish(x, f"key-{n}", f"m{n}".encode(), pika.BasicProperties(headers=headers))
    q1, q2 = ctx.queue(ch, "q1"), ctx.queue(ch, "q2")
    ch.queue_bind(q1, x, "anything")
    seen: dict[str, Observation] = {"q1 on bind": _got(ch, q1, 5)}
    ch.basic_publish(x, "live", b"m9")
    seen["q1 live"] = _got(ch, q1, 1)
    ch.queue_bind(q2, x, "")
    seen["q2 on bind"] = _got(ch, q2, 5)
    ch.queue_bind(q1, x, "second-key")  # every new binding replays, even to a queue already bound
    seen["q1 second binding"] = _got(ch, q1, 5)
    ch.basic_publish(x, "live", b"m10")
    seen["both live"] = [_got(ch, q1, 1), _got(ch, q2, 1)]
    return seen


@plugin_scenario
def recent_history_default_length_exchanges_and_deletion(ctx: Ctx) -> Observation:
    ch = ctx.channel(confirm=True)
    x = ctx.exchange(ch, "rh", "x-recent-history")
    for n in range(25):
        ch.basic_publish(x, "k", f"m{n}".encode())
    fanout = ctx.exchange(ch, "fan", "fanout")
    f1, f2 = ctx.queue(ch, "f1"), ctx.queue(ch, "f2")
    ch.queue_bind(f1, fanout, "")
    ch.queue_bind(f2, fanout, "")
    ch.exchange_bind(fanout, x, "")
    seen: dict[str, Observation] = {"via exchange": [bodies_after(ch, f1, 20), bodies_after(ch, f2, 20)]}
    ch.exchange_delete(x)
    ch.exchange_declare(x, "x-recent-history")
    q = ctx.queue(ch, "q")
    ch.queue_bind(q, x, "")
    ch.basic_publish(x, "k", b"after-redeclare")
    seen["after redeclare"] = bodies_after(ch, q, 1)
    return seen


def bodies_after(ch: Any, queue: str, count: int) -> list[str]:
    wait_count(ch, queue, count)
    return bodies(ch, queue)


@plugin_scenario
def recent_history_refusals(ctx: Ctx) -> Observation:
    def declare(value: Any) -> Observation:
        ch = ctx.channel()
        arguments = {"x-recent-history-length": value}
        result = outcome(lambda: ch.exchange_declare(ctx.name("rh"), "x-recent-history", arguments=arguments))
        if result == "ok":
            ch.exchange_delete(ctx.name("rh"))
        return result

    return {repr(value): declare(value) for value in (0, -1, "abc", "5", True, 1, 2**40, -(2**40))}
