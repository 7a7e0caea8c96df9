"""exchange.declare / exchange.delete and their errors, auto-delete exchanges, exchange-to-exchange bindings
and alternate exchanges."""

from __future__ import annotations

from typing import Any

from .kit import Attempts, Ctx, Observation, bodies, drain, outcome, pump, pump_for, scenario


@scenario
def exchange_declare_errors(ctx: Ctx) -> Observation:
    connection = ctx.connect()
    attempt = Attempts(connection)
    results = attempt.results

    x = ctx.name("x")
    setup = connection.channel()
    ctx.exchange(setup, "x", "direct")
    ctx.exchange(setup, "ae-x", "direct", arguments={"alternate-exchange": "ae1"})
    attempt("passive-missing", lambda ch: ch.exchange_declare(ctx.name("missing"), passive=True))
    attempt("passive-existing-other-type", lambda ch: ch.exchange_declare(x, "fanout", passive=True))
    attempt("redeclare-same", lambda ch: ch.exchange_declare(x, "direct"))
    attempt("type", lambda ch: ch.exchange_declare(x, "topic"))
    attempt("durable", lambda ch: ch.exchange_declare(x, "direct", durable=True))
    attempt("auto-delete", lambda ch: ch.exchange_declare(x, "direct", auto_delete=True))
    attempt("internal", lambda ch: ch.exchange_declare(x, "direct", internal=True))
    attempt("arg-added", lambda ch: ch.exchange_declare(x, "direct", arguments={"alternate-exchange": "a"}))
    attempt("arg-removed", lambda ch: ch.exchange_declare(ctx.name("ae-x"), "direct"))
    attempt(
        "arg-changed",
        lambda ch: ch.exchange_declare(ctx.name("ae-x"), "direct", arguments={"alternate-exchange": "ae2"}),
    )
    attempt("amq-prefix", lambda ch: ch.exchange_declare("amq." + ctx.prefix))
    attempt("amq-direct-equivalent", lambda ch: ch.exchange_declare("amq.direct", "direct", durable=True))
    attempt("amq-direct-passive", lambda ch: ch.exchange_declare("amq.match", passive=True))
    attempt("delete-amq-direct", lambda ch: ch.exchange_delete("amq.direct"))
    attempt("declare-default", lambda ch: ch.exchange_declare("", "direct"))
    attempt("delete-default", lambda ch: ch.exchange_delete(""))
    attempt("delete-missing", lambda ch: ch.exchange_delete(ctx.name("missing")))
    attempt(
        "publish-missing",
        lambda ch: (ch.confirm_delivery(), ch.basic_publish(ctx.name("missing"), "k", b"x")),
    )
    internal = ctx.exchange(setup, "internal", "fanout", internal=True)
    attempt("publish-internal", lambda ch: (ch.confirm_delivery(), ch.basic_publish(internal, "k", b"x")))
    results["connection-still-open"] = connection.is_open
    return results


@scenario
def exchange_delete_and_auto_delete(ctx: Ctx) -> Observation:
    connection = ctx.connect()
    ch = connection.channel()

    def exists(name: str) -> Observation:
        return outcome(lambda: connection.channel().exchange_declare(name, passive=True))

    used = ctx.exchange(ch, "used", "fanout")
    q = ctx.queue(ch)
    ch.queue_bind(q, used)
    results: dict[str, Any] = {
        "if-unused-used": outcome(lambda: connection.channel().exchange_delete(used, True))
    }
    unused = ctx.exchange(ch, "unused", "fanout")
    results["if-unused-unused"] = outcome(lambda: connection.channel().exchange_delete(unused, True))
    results["unused-gone"] = exists(unused)
    ad = ctx.exchange(ch, "ad", "direct", auto_delete=True)
    results["ad-never-bound"] = exists(ad)
    q2 = ctx.queue(ch)
    ch.queue_bind(q, ad, "a")
    ch.queue_bind(q2, ad, "b")
    ch.queue_unbind(q, ad, "a")
    results["ad-one-binding-left"] = exists(ad)
    ch.queue_unbind(q2, ad, "b")
    pump(connection, lambda: exists(ad) != "ok")  # RabbitMQ deletes it asynchronously
    results["ad-after-last-unbind"] = exists(ad)
    return results


@scenario
def exchange_to_exchange_routing(ctx: Ctx) -> Observation:
    ch = ctx.channel(confirm=True)
    top = ctx.exchange(ch, "top", "topic")
    middle = ctx.exchange(ch, "middle", "direct")
    bottom = ctx.exchange(ch, "bottom", "fanout")
    ch.exchange_bind(destination=middle, source=top, routing_key="logs.#")
    ch.exchange_bind(destination=bottom, source=middle, routing_key="logs.error")
    q_middle, q_bottom, q_both = ctx.queue(ch), ctx.queue(ch), ctx.queue(ch)
    ch.queue_bind(q_middle, middle, "logs.info")
    ch.queue_bind(q_bottom, bottom)
    ch.queue_bind(q_both, top, "#")
    ch.queue_bind(q_both, bottom)
    for key in ("logs.info", "logs.error", "other"):
        ch.basic_publish(top, key, key.encode())
    ch.exchange_unbind(destination=middle, source=top, routing_key="logs.#")
    ch.basic_publish(top, "logs.error", b"after-unbind")
    got = {"middle": drain(ch, q_middle), "bottom": drain(ch, q_bottom), "both": drain(ch, q_both)}
    ch.basic_publish(bottom, "x", b"direct-to-bottom")
    method, _props, _body = ch.basic_get(q_both, auto_ack=True)
    got["delivery"] = [method.exchange, method.routing_key]
    return got


@scenario
def exchange_to_exchange_cycles(ctx: Ctx) -> Observation:
    ch = ctx.channel(confirm=True)
    names = [ctx.exchange(ch, f"e{i}", "fanout") for i in range(3)]
    for i in range(3):
        ch.exchange_bind(destination=names[(i + 1) % 3], source=names[i])
    self_bound = ctx.exchange(ch, "self", "fanout")
    ch.exchange_bind(destination=self_bound, source=self_bound)
    queues = [ctx.queue(ch) for _ in range(4)]
    for q, x in zip(queues, [*names, self_bound], strict=True):
        ch.queue_bind(q, x)
    ch.queue_bind(queues[0], names[2])  # reachable twice
    ch.basic_publish(names[1], "", b"cycle")
    ch.basic_publish(self_bound, "", b"self")
    return [bodies(ch, q) for q in queues]


@scenario
def alternate_exchanges(ctx: Ctx) -> Observation:
    connection = ctx.connect()
    ch = connection.channel()
    returned: list[Any] = []
    ch.add_on_return_callback(lambda _c, m, _p, b: returned.append([m.reply_code, m.reply_text, b.decode()]))
    ae2 = ctx.exchange(ch, "ae2", "fanout")
    ae1 = ctx.exchange(ch, "ae1", "direct", arguments={"alternate-exchange": ae2})
    main = ctx.exchange(ch, "main", "direct", arguments={"alternate-exchange": ae1})
    loop1 = ctx.exchange(ch, "loop1", "direct", arguments={"alternate-exchange": ctx.name("loop2")})
    ctx.exchange(ch, "loop2", "direct", arguments={"alternate-exchange": loop1})
    dangling = ctx.exchange(ch, "dangling", "direct", arguments={"alternate-exchange": ctx.name("none")})
    q_main, q_ae1, q_ae2 = ctx.queue(ch), ctx.queue(ch), ctx.queue(ch)
    ch.queue_bind(q_main, main, "known")
    ch.queue_bind(q_ae1, ae1, "k1")
    ch.queue_bind(q_ae2, ae2)
    ch.basic_publish(main, "known", b"routed", mandatory=True)
    ch.basic_publish(main, "k1", b"to-ae1", mandatory=True)
    ch.basic_publish(main, "other", b"to-ae2", mandatory=True)
    ch.basic_publish(loop1, "x", b"loop", mandatory=True)
    ch.basic_publish(dangling, "x", b"dangling", mandatory=True)
    pump(connection, lambda: len(returned) == 2)
    pump_for(connection, 0.1)
    got: dict[str, Any] = {"main": drain(ch, q_main), "ae1": drain(ch, q_ae1)}
    method, _props, body = ch.basic_get(q_ae2, auto_ack=True)
    got["ae2"] = [body.decode(), method.exchange, method.routing_key]
    got["returned"] = returned
    return got


@scenario
def alternate_exchange_inside_e2e(ctx: Ctx) -> Observation:
    ch = ctx.channel(confirm=True)
    ae = ctx.exchange(ch, "ae", "fanout")
    inner = ctx.exchange(ch, "inner", "direct", arguments={"alternate-exchange": ae})
    outer = ctx.exchange(ch, "outer", "fanout")
    ch.exchange_bind(destination=inner, source=outer)
    q_ae, q_outer, q_inner = ctx.queue(ch), ctx.queue(ch), ctx.queue(ch)
    ch.queue_bind(q_ae, ae)
    ch.queue_bind(q_inner, inner, "known")
    ch.basic_publish(outer, "unknown", b"via-outer")
    ch.basic_publish(outer, "known", b"routed-by-inner")
    ch.queue_bind(q_outer, outer)
    ch.basic_publish(outer, "unknown", b"outer-has-a-queue")
    return {"ae": bodies(ch, q_ae), "inner": bodies(ch, q_inner), "outer": bodies(ch, q_outer)}
