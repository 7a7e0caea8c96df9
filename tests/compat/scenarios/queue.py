"""queue.declare / queue.bind / queue.purge / queue.delete and their errors, message and consumer counts,
exclusive and auto-delete queues."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from .kit import Attempts, Ctx, Deliveries, Observation, bodies, confirming_queue, outcome, pump, scenario


@scenario
def queue_declare_errors(ctx: Ctx) -> Observation:
    connection = ctx.connect()
    attempt = Attempts(connection)
    results = attempt.results

    setup = connection.channel()
    q = ctx.queue(setup, "q", exclusive=False)
    ctx.queue(setup, "ttl", exclusive=False, arguments={"x-message-ttl": 1000})
    ctx.queue(setup, "durable", exclusive=False, durable=True)
    attempt("passive-missing", lambda ch: ch.queue_declare(ctx.name("missing"), passive=True))
    attempt("durable-added", lambda ch: ch.queue_declare(q, durable=True))
    attempt("durable-removed", lambda ch: ch.queue_declare(ctx.name("durable")))
    attempt("auto-delete", lambda ch: ch.queue_declare(q, auto_delete=True))
    attempt("exclusive", lambda ch: ch.queue_declare(q, exclusive=True))
    attempt("ttl-changed", lambda ch: ch.queue_declare(ctx.name("ttl"), arguments={"x-message-ttl": 2000}))
    attempt("ttl-removed", lambda ch: ch.queue_declare(ctx.name("ttl")))
    attempt("arg-added", lambda ch: ch.queue_declare(q, arguments={"x-max-length": 10}))
    attempt("unknown-arg-ignored", lambda ch: ch.queue_declare(q, arguments={"x-whatever": "a"}))
    attempt("amq-prefix", lambda ch: ch.queue_declare("amq." + ctx.prefix))
    attempt("no-previous-bind", lambda ch: ch.queue_bind("", "amq.direct", "k"))
    attempt("no-previous-purge", lambda ch: ch.queue_purge(""))
    attempt("no-previous-delete", lambda ch: ch.queue_delete(""))
    attempt("no-previous-get", lambda ch: ch.basic_get(""))
    attempt(
        "passive-empty-name",
        lambda ch: (ch.queue_declare("", exclusive=True), ch.queue_declare("", passive=True)),
    )
    results["connection-still-open"] = connection.is_open
    return results


@scenario
def queue_counts_purge_delete(ctx: Ctx) -> Observation:
    connection = ctx.connect()
    ch, q = confirming_queue(ctx, connection, 5, "counts")
    results: dict[str, Any] = {}
    ok = ch.queue_declare(q, exclusive=True).method
    results["declare-ok"] = [ok.queue, ok.message_count, ok.consumer_count]
    method, _props, _body = ch.basic_get(q)
    results["get-ok"] = [method.delivery_tag, method.message_count, method.redelivered]
    consumer_ch = connection.channel()
    consumer_ch.basic_qos(prefetch_count=1)
    seen = Deliveries()
    consumer_ch.basic_consume(q, seen, consumer_tag="c1")
    connection.channel().basic_consume(q, Deliveries(), consumer_tag="c2")  # second consumer, takes the rest
    pump(connection, lambda: ch.queue_declare(q, passive=True).method.message_count == 0)
    ok = ch.queue_declare(q, passive=True).method
    results["passive-after-consume"] = [ok.message_count, ok.consumer_count]
    p = connection.channel()
    p.confirm_delivery()
    q2 = ctx.queue(p)
    for i in range(4):
        p.basic_publish("", q2, f"n{i}".encode())
    results["purge"] = [p.queue_purge(q2).method.message_count, p.queue_purge(q2).method.message_count]
    p.basic_publish("", q2, b"x")
    results["delete-if-empty"] = outcome(lambda: connection.channel().queue_delete(q2, if_empty=True))
    results["delete-if-unused"] = outcome(lambda: connection.channel().queue_delete(q, if_unused=True))
    results["delete"] = connection.channel().queue_delete(q2).method.message_count
    results["delete-missing"] = connection.channel().queue_delete(ctx.name("missing")).method.message_count
    return results


@scenario
def exclusive_queue_access(ctx: Ctx) -> Observation:
    owner = ctx.connect()
    q = ctx.queue(owner.channel(), "excl")
    owner.channel().queue_bind(q, "amq.direct", ctx.name("k"))
    other = ctx.connect()
    results: dict[str, Any] = {}
    attempts: dict[str, Callable[[Any], object]] = {
        "declare": lambda ch: ch.queue_declare(q),
        "passive": lambda ch: ch.queue_declare(q, passive=True),
        "consume": lambda ch: ch.basic_consume(q, Deliveries()),
        "get": lambda ch: ch.basic_get(q),
        "purge": lambda ch: ch.queue_purge(q),
        "delete": lambda ch: ch.queue_delete(q),
        "bind": lambda ch: ch.queue_bind(q, "amq.direct", "other"),
        "unbind-existing": lambda ch: ch.queue_unbind(q, "amq.direct", ctx.name("k")),
        "unbind-missing": lambda ch: ch.queue_unbind(q, "amq.direct", "never"),
        "publish": lambda ch: (ch.confirm_delivery(), ch.basic_publish("", q, b"from-other")),
    }
    for label, fn in attempts.items():
        results[label] = outcome(partial(fn, other.channel()))
    results["owner-sees"] = bodies(owner.channel(), q)
    owner.close()

    def gone() -> Observation:
        return outcome(lambda: other.channel().queue_declare(q, passive=True))

    pump(other, lambda: (seen := gone()) != "ok" and seen["channel_error"][0] == 404)
    results["after-owner-closed"] = gone()
    return results


@scenario
def bindings_and_errors(ctx: Ctx) -> Observation:
    connection = ctx.connect()
    ch, q = confirming_queue(ctx, connection, suffix="q")
    results: dict[str, Any] = {
        "bind-missing-queue": outcome(
            lambda: connection.channel().queue_bind(ctx.name("nq"), "amq.direct", "k")
        ),
        "bind-missing-exchange": outcome(lambda: connection.channel().queue_bind(q, ctx.name("nx"), "k")),
        "unbind-missing-binding": outcome(
            lambda: connection.channel().queue_unbind(q, "amq.direct", "never")
        ),
        "unbind-missing-queue": outcome(
            lambda: connection.channel().queue_unbind(ctx.name("nq"), "amq.direct")
        ),
        "unbind-missing-exchange": outcome(lambda: connection.channel().queue_unbind(q, ctx.name("nx"), "k")),
        "bind-default": outcome(lambda: connection.channel().queue_bind(q, "", "k")),
        "e2e-missing-source": outcome(
            lambda: connection.channel().exchange_bind(destination="amq.fanout", source=ctx.name("nx"))
        ),
        "e2e-unbind-missing": outcome(
            lambda: connection.channel().exchange_unbind(
                destination="amq.fanout", source="amq.direct", routing_key="z"
            )
        ),
    }
    ch.queue_bind("", "amq.direct", "")  # last declared queue, routing key = its name
    ch.basic_publish("amq.direct", q, b"shortcut")
    results["shortcut"] = bodies(ch, q)
    return results


@scenario
def auto_delete_queue(ctx: Ctx) -> Observation:
    connection = ctx.connect()
    ch = connection.channel()
    q = ctx.queue(ch, "ad", exclusive=False, auto_delete=True)

    def state() -> Observation:
        return outcome(lambda: connection.channel().queue_declare(q, passive=True))

    results: dict[str, Any] = {"no-consumer-yet": state()}
    ch.basic_consume(q, Deliveries(), consumer_tag="c1")
    ch.basic_consume(q, Deliveries(), consumer_tag="c2")
    ch.basic_cancel("c1")
    results["one-left"] = state()
    ch.basic_cancel("c2")
    pump(connection, lambda: state() != "ok")  # RabbitMQ deletes it asynchronously
    results["after-last-cancel"] = state()
    return results
