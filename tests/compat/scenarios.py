"""Client scenarios for the differential suite.

Each scenario takes a ``Ctx`` (a broker URL plus a unique name prefix) and returns a plain JSON-able
observation of what a pika client saw: messages per queue, reply codes and texts, declare-ok counts,
redelivered flags, delivery order, get-ok message counts. ``run_scenario`` runs one and normalises what
differs between runs (the prefix, server-generated ``amq.gen-*`` / ``amq.ctag-*`` names), so the observation
from WarrenMQ can be compared for equality with the one from RabbitMQ.
"""

from __future__ import annotations

import json
import re
import time
import uuid
from collections.abc import Callable
from functools import partial
from typing import Any
from urllib.parse import urlparse

import pika
import pika.exceptions

Observation = Any
Scenario = Callable[["Ctx"], Observation]

SCENARIOS: dict[str, Scenario] = {}
SETTLE_S = 0.3  # window in which deliveries that must not happen would have shown up


def scenario(fn: Scenario) -> Scenario:
    SCENARIOS[fn.__name__] = fn
    return fn


class Ctx:
    """Connections to one broker for one scenario run, with names made unique by ``prefix``."""

    def __init__(self, url: str, prefix: str) -> None:
        parsed = urlparse(url)
        self.prefix = prefix
        self.host = parsed.hostname or "127.0.0.1"
        self.port = parsed.port or 5672
        self.vhost = (parsed.path[1:] or "/") if parsed.path else "/"
        self.username = parsed.username or "guest"
        self.password = parsed.password or "guest"
        self.connections: list[pika.BlockingConnection] = []
        self.exchanges: list[str] = []
        self.queues: list[str] = []

    def params(self, **overrides: Any) -> pika.ConnectionParameters:
        settings: dict[str, Any] = {
            "host": self.host,
            "port": self.port,
            "virtual_host": self.vhost,
            "credentials": pika.PlainCredentials(self.username, self.password),
            "connection_attempts": 1,
            "socket_timeout": 5,
            "stack_timeout": 10,
        }
        settings.update(overrides)
        return pika.ConnectionParameters(**settings)

    def connect(self, **overrides: Any) -> pika.BlockingConnection:
        connection = pika.BlockingConnection(self.params(**overrides))
        self.connections.append(connection)
        return connection

    def channel(self, confirm: bool = False) -> Any:
        connection = (
            self.connections[0] if self.connections and self.connections[0].is_open else self.connect()
        )
        ch = connection.channel()
        if confirm:
            ch.confirm_delivery()
        return ch

    def name(self, suffix: str) -> str:
        return f"{self.prefix}-{suffix}"

    def exchange(self, ch: Any, suffix: str, kind: str = "direct", **kwargs: Any) -> str:
        name = self.name(suffix)
        ch.exchange_declare(name, kind, **kwargs)
        self.exchanges.append(name)
        return name

    def queue(self, ch: Any, suffix: str = "", **kwargs: Any) -> str:
        """Declare a queue (exclusive unless told otherwise); an empty suffix means server-named."""
        kwargs.setdefault("exclusive", True)
        name: str = ch.queue_declare(self.name(suffix) if suffix else "", **kwargs).method.queue
        if not kwargs["exclusive"]:
            self.queues.append(name)
        return name

    def close(self) -> None:
        if self.exchanges or self.queues:
            connection = pika.BlockingConnection(self.params())
            for name in self.queues:
                connection.channel().queue_delete(name)
            for name in self.exchanges:
                connection.channel().exchange_delete(name)
            connection.close()
        for connection in self.connections:
            if connection.is_open:
                try:
                    connection.close()
                except pika.exceptions.AMQPError:
                    pass


def outcome(fn: Callable[[], object]) -> Observation:
    """ "ok", or the channel/connection error the broker answered with."""
    try:
        fn()
    except pika.exceptions.ChannelClosedByBroker as exc:
        return {"channel_error": [exc.reply_code, exc.reply_text]}
    except pika.exceptions.ConnectionClosedByBroker as exc:
        return {"connection_error": [exc.reply_code, exc.reply_text]}
    except pika.exceptions.ProbableAuthenticationError as exc:
        return {"auth_error": str(exc)}
    except pika.exceptions.ProbableAccessDeniedError as exc:
        return {"access_denied": str(exc)}
    except pika.exceptions.UnroutableError as exc:
        return {
            "unroutable": [[m.method.reply_code, m.method.reply_text, m.body.decode()] for m in exc.messages]
        }
    return "ok"


def drain(ch: Any, queue: str) -> list[Observation]:
    """basic.get (auto-ack) until empty: [body, redelivered, message_count] per message."""
    out: list[Observation] = []
    for _ in range(10_000):
        method, _props, body = ch.basic_get(queue, auto_ack=True)
        if method is None:
            return out
        out.append([body.decode(), method.redelivered, method.message_count])
    raise AssertionError("queue did not run empty")


def bodies(ch: Any, queue: str) -> list[str]:
    return [entry[0] for entry in drain(ch, queue)]


def pump(connection: pika.BlockingConnection, done: Callable[[], bool], timeout_s: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while not done():
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False
        connection.process_data_events(time_limit=min(0.05, remaining))
    return True


def pump_for(connection: pika.BlockingConnection, duration_s: float) -> None:
    deadline = time.monotonic() + duration_s
    while (remaining := deadline - time.monotonic()) > 0:
        connection.process_data_events(time_limit=min(0.05, remaining))


class Deliveries:
    def __init__(self) -> None:
        self.items: list[tuple[str, int, bool, str]] = []

    def __call__(self, _ch: Any, method: Any, _props: Any, body: bytes) -> None:
        self.items.append((method.consumer_tag, method.delivery_tag, method.redelivered, body.decode()))

    def __len__(self) -> int:
        return len(self.items)


_GENERATED = re.compile(r"amq\.(gen|ctag)-[A-Za-z0-9_\-]+")


def normalise(observation: Observation, prefix: str) -> Observation:
    text = json.dumps(observation, sort_keys=True).replace(prefix, "P")
    seen: dict[str, str] = {}

    def rename(match: re.Match[str]) -> str:
        key = match.group(0)
        if key not in seen:
            seen[key] = (
                f"amq.{match.group(1)}-#{sum(1 for v in seen if v.startswith('amq.' + match.group(1)))}"
            )
        return seen[key]

    return json.loads(_GENERATED.sub(rename, text))


def run_scenario(url: str, name: str) -> Observation:
    prefix = f"cmp{uuid.uuid4().hex[:10]}"
    ctx = Ctx(url, prefix)
    try:
        observation = SCENARIOS[name](ctx)
    finally:
        ctx.close()
    return normalise(observation, prefix)


# ----------------------------------------------------------------------------------------------------------
# Routing
# ----------------------------------------------------------------------------------------------------------


@scenario
def direct_routing(ctx: Ctx) -> Observation:
    ch = ctx.channel(confirm=True)
    x = ctx.exchange(ch, "direct", "direct")
    queues = {"info": ctx.queue(ch), "error": ctx.queue(ch), "both": ctx.queue(ch)}
    ch.queue_bind(queues["info"], x, "info")
    ch.queue_bind(queues["error"], x, "error")
    for key in ("info", "error", ""):
        ch.queue_bind(queues["both"], x, key)
    for key in ("info", "error", "warning", "", "INFO", "info "):
        ch.basic_publish(x, key, f"[{key}]".encode())
    ch.basic_publish("", queues["info"], b"default-exchange")
    return {label: bodies(ch, q) for label, q in queues.items()}


@scenario
def fanout_routing(ctx: Ctx) -> Observation:
    ch = ctx.channel(confirm=True)
    x = ctx.exchange(ch, "fanout", "fanout")
    queues = [ctx.queue(ch) for _ in range(3)]
    for i, q in enumerate(queues):
        ch.queue_bind(q, x, f"k{i}")
    ch.queue_bind(queues[0], x, "again")  # bound twice: still one copy
    ch.basic_publish(x, "anything", b"1")
    ch.basic_publish(x, "", b"2")
    return [bodies(ch, q) for q in queues]


TOPIC_BINDINGS = [
    "a.b.c", "a.*.c", "*", "*.*", "#", "a.#", "#.a", "a.#.c", "#.#", "#.*", "*.#", "a.*.#", "#.b.#", "",
    "a..b", "a.", "a*",
]  # fmt: skip
TOPIC_KEYS = [
    "",
    "a",
    "a.b",
    "a.c",
    "a.b.c",
    "a.b.x.c",
    "x.y.a",
    "b",
    "a.b.c.d",
    "a..b",
    "a.",
    ".",
    "A.B",
    "a*",
]


@scenario
def topic_routing(ctx: Ctx) -> Observation:
    ch = ctx.channel(confirm=True)
    x = ctx.exchange(ch, "topic", "topic")
    queues = {}
    for pattern in TOPIC_BINDINGS:
        queues[pattern] = ctx.queue(ch)
        ch.queue_bind(queues[pattern], x, pattern)
    for key in TOPIC_KEYS:
        ch.basic_publish(x, key, key.encode() or b"<empty>")
    return {pattern: bodies(ch, q) for pattern, q in queues.items()}


HEADER_BINDINGS: list[dict[str, Any]] = [
    {"x-match": "all", "a": "1", "b": "2"},
    {"x-match": "any", "a": "1", "b": "2"},
    {"a": "1"},
    {"x-match": "all"},
    {"x-match": "any"},
    {"x-match": "all", "n": 5},
    {"x-match": "all", "s": "5"},
    {"x-match": "all", "t": True},
    {"x-match": "all", "a": "1", "x-ignored": "z"},
    {"x-match": "any", "x-only": "v"},
]
HEADER_MESSAGES: list[dict[str, Any] | None] = [
    None,
    {},
    {"a": "1"},
    {"a": "1", "b": "2"},
    {"a": "1", "b": "x"},
    {"b": "2", "z": "9"},
    {"n": 5},
    {"n": "5"},
    {"s": 5},
    {"s": "5"},
    {"t": True},
    {"t": False},
    {"x-only": "v"},
    {"a": "1", "x-extra": "y"},
]


@scenario
def headers_routing(ctx: Ctx) -> Observation:
    ch = ctx.channel(confirm=True)
    x = ctx.exchange(ch, "headers", "headers")
    queues = []
    for arguments in HEADER_BINDINGS:
        q = ctx.queue(ch)
        ch.queue_bind(q, x, "", arguments=arguments)
        queues.append(q)
    for index, headers in enumerate(HEADER_MESSAGES):
        ch.basic_publish(x, "", str(index).encode(), properties=pika.BasicProperties(headers=headers))
    return [
        [json.dumps(arguments, sort_keys=True), bodies(ch, q)]
        for arguments, q in zip(HEADER_BINDINGS, queues, strict=True)
    ]


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


# ----------------------------------------------------------------------------------------------------------
# Declarations and their errors
# ----------------------------------------------------------------------------------------------------------


@scenario
def exchange_declare_errors(ctx: Ctx) -> Observation:
    connection = ctx.connect()
    results: dict[str, Any] = {}

    def attempt(label: str, fn: Callable[[Any], object]) -> None:
        results[label] = outcome(lambda: fn(connection.channel()))

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
    deadline = time.monotonic() + 5
    while exists(ad) == "ok" and time.monotonic() < deadline:
        time.sleep(0.02)
    results["ad-after-last-unbind"] = exists(ad)
    return results


@scenario
def queue_declare_errors(ctx: Ctx) -> Observation:
    connection = ctx.connect()
    results: dict[str, Any] = {}

    def attempt(label: str, fn: Callable[[Any], object]) -> None:
        results[label] = outcome(lambda: fn(connection.channel()))

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
    ch = connection.channel()
    ch.confirm_delivery()
    q = ctx.queue(ch, "counts")
    for i in range(5):
        ch.basic_publish("", q, f"m{i}".encode())
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
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        gone = outcome(lambda: other.channel().queue_declare(q, passive=True))
        if gone != "ok" and gone["channel_error"][0] == 404:
            break
        time.sleep(0.02)
    results["after-owner-closed"] = gone
    return results


@scenario
def bindings_and_errors(ctx: Ctx) -> Observation:
    connection = ctx.connect()
    ch = connection.channel()
    ch.confirm_delivery()
    q = ctx.queue(ch, "q")
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


# ----------------------------------------------------------------------------------------------------------
# Acknowledgements, requeueing, recovery
# ----------------------------------------------------------------------------------------------------------


def _filled(ctx: Ctx, connection: pika.BlockingConnection, count: int) -> tuple[Any, str]:
    ch = connection.channel()
    ch.confirm_delivery()
    q = ctx.queue(ch)
    for i in range(count):
        ch.basic_publish("", q, f"m{i}".encode())
    return ch, q


def _get_tags(ch: Any, q: str, count: int) -> list[int]:
    return [ch.basic_get(q)[0].delivery_tag for _ in range(count)]


@scenario
def requeue_order_and_redelivered(ctx: Ctx) -> Observation:
    connection = ctx.connect()
    ch, q = _filled(ctx, connection, 6)
    tags = _get_tags(ch, q, 4)
    ch.basic_nack(tags[3], requeue=True)
    ch.basic_reject(tags[1], requeue=True)
    ch.basic_nack(tags[0], requeue=True)
    after_nack = drain(ch, q)
    return {"tags": tags, "after": after_nack}


@scenario
def ack_nack_multiple(ctx: Ctx) -> Observation:
    connection = ctx.connect()
    ch, q = _filled(ctx, connection, 8)
    tags = _get_tags(ch, q, 8)
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
    ch, q = _filled(ctx, connection, 2)
    [tag] = _get_tags(ch, q, 1)
    ch.basic_ack(tag)
    ch.basic_ack(tag)
    results["double-ack"] = outcome(lambda: ch.queue_declare("", exclusive=True))
    ch2 = connection.channel()
    [tag] = _get_tags(ch2, q, 1)
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
    ch, q = _filled(ctx, connection, 5)
    consumer_ch = connection.channel()
    seen = Deliveries()
    consumer_ch.basic_consume(q, seen, consumer_tag="c")
    pump(connection, lambda: len(seen) == 5)
    consumer_ch.basic_ack(2)
    consumer_ch.basic_nack(4, requeue=True)
    pump(connection, lambda: len(seen) == 6)
    consumer_ch.close()
    return {"seen": seen.items, "after-close": drain(ch, q)}


@scenario
def recover(ctx: Ctx) -> Observation:
    connection = ctx.connect()
    ch, q = _filled(ctx, connection, 3)
    seen = Deliveries()
    ch.basic_consume(q, seen, consumer_tag="c")
    pump(connection, lambda: len(seen) == 3)
    ch.basic_recover(requeue=True)
    pump(connection, lambda: len(seen) == 6)
    ch.basic_cancel("c")
    get_ch, q2 = _filled(ctx, connection, 3)
    _get_tags(get_ch, q2, 2)
    get_ch.basic_recover(requeue=True)
    results: dict[str, Any] = {"consumer": seen.items, "get": drain(get_ch, q2)}
    results["requeue-false"] = outcome(lambda: connection.channel().basic_recover(requeue=False))
    return results


@scenario
def basic_get_sequence(ctx: Ctx) -> Observation:
    connection = ctx.connect()
    ch, q = _filled(ctx, connection, 3)
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
    ch = connection.channel()
    ch.confirm_delivery()
    q = ctx.queue(ch)
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


# ----------------------------------------------------------------------------------------------------------
# Consumers and QoS
# ----------------------------------------------------------------------------------------------------------


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


@scenario
def qos_prefetch(ctx: Ctx) -> Observation:
    return {
        "per-consumer-2": _qos_run(ctx, 2, None),
        "global-3": _qos_run(ctx, None, 3),
        "both-2-3": _qos_run(ctx, 2, 3),
        "unlimited": _qos_run(ctx, None, None),
        "size": outcome(lambda: ctx.connect().channel().basic_qos(prefetch_size=5)),
    }


@scenario
def consumers_round_robin_and_exclusive(ctx: Ctx) -> Observation:
    connection = ctx.connect()
    ch = connection.channel()
    ch.confirm_delivery()
    q = ctx.queue(ch)
    seen = Deliveries()
    for tag in ("a", "b", "c"):
        ch.basic_consume(q, seen, consumer_tag=tag, auto_ack=True)
    for i in range(9):
        ch.basic_publish("", q, f"m{i}".encode())
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
    ch, q = _filled(ctx, connection, 2)
    seen = Deliveries()
    ch.basic_consume(q, seen, consumer_tag="c")
    pump(connection, lambda: len(seen) == 2)
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
    deadline = time.monotonic() + 5
    while state() == "ok" and time.monotonic() < deadline:
        time.sleep(0.02)
    results["after-last-cancel"] = state()
    return results


# ----------------------------------------------------------------------------------------------------------
# Transactions, confirms, connection-level errors
# ----------------------------------------------------------------------------------------------------------


@scenario
def transactions(ctx: Ctx) -> Observation:
    connection = ctx.connect()
    ch = connection.channel()
    ch.confirm_delivery()
    q = ctx.queue(ch)
    observer = connection.channel()

    def ready() -> int:
        count: int = observer.queue_declare(q, passive=True).method.message_count
        return count

    tx = connection.channel()
    tx.tx_select()
    tx.basic_publish("", q, b"t1")
    tx.basic_publish("", q, b"t2")
    results: dict[str, Any] = {"before-commit": ready()}
    tx.tx_commit()
    results["after-commit"] = ready()
    tx.basic_publish("", q, b"rolled-back")
    tx.tx_rollback()
    results["after-rollback"] = ready()
    method, _p, _b = tx.basic_get(q)
    tx.basic_ack(method.delivery_tag)
    tx.tx_rollback()
    results["ack-rolled-back"] = ready()
    tx.basic_ack(method.delivery_tag)
    tx.tx_commit()
    tx.close()
    results["remaining"] = drain(ch, q)
    results["commit-without-select"] = outcome(lambda: connection.channel().tx_commit())
    results["rollback-without-select"] = outcome(lambda: connection.channel().tx_rollback())

    def tx_then_confirm() -> None:
        c = connection.channel()
        c.tx_select()
        c.confirm_delivery()

    def confirm_then_tx() -> None:
        c = connection.channel()
        c.confirm_delivery()
        c.tx_select()

    results["tx-then-confirm"] = outcome(tx_then_confirm)
    results["confirm-then-tx"] = outcome(confirm_then_tx)
    return results


@scenario
def confirms_with_returns(ctx: Ctx) -> Observation:
    events: list[str] = []
    confirmed: list[int] = []

    def on_open(conn: Any) -> None:
        conn.channel(on_open_callback=on_channel)

    def on_channel(ch: Any) -> None:
        ch.add_on_return_callback(lambda _c, m, _p, b: events.append(f"return {m.reply_code} {b.decode()}"))

        def on_confirm(frame: Any) -> None:
            # A broker may coalesce acks (multiple=true); expand them to the tags they cover.
            method = frame.method
            first = (confirmed[-1] + 1 if confirmed else 1) if method.multiple else method.delivery_tag
            for tag in range(first, method.delivery_tag + 1):
                confirmed.append(tag)
                events.append(f"{type(method).__name__} {tag}")
            if confirmed and confirmed[-1] >= 3:
                ch.connection.close()

        def on_selected(_frame: Any) -> None:
            ch.basic_publish("amq.direct", ctx.name("nobody"), b"m1", mandatory=True)
            ch.basic_publish("amq.direct", ctx.name("nobody"), b"m2")
            ch.basic_publish("amq.direct", ctx.name("nobody"), b"m3", mandatory=True)

        ch.confirm_delivery(ack_nack_callback=on_confirm, callback=on_selected)

    connection = pika.SelectConnection(
        ctx.params(), on_open_callback=on_open, on_close_callback=lambda c, _r: c.ioloop.stop()
    )
    connection.ioloop.call_later(5, connection.ioloop.stop)
    connection.ioloop.start()
    # Each message's return comes before its own ack; acks cover every tag once, in order. How acks interleave
    # with other messages' returns (and whether they are coalesced) is the broker's choice, so not compared.
    return {
        "returns": [event for event in events if event.startswith("return")],
        "return-before-ack": [
            events.index(f"return 312 m{n}") < events.index(f"Ack {n}")
            for n in (1, 3)
            if f"Ack {n}" in events
        ],
        "confirmed": confirmed,
    }


@scenario
def connection_level_errors(ctx: Ctx) -> Observation:
    results: dict[str, Any] = {}
    results["flow-false"] = outcome(lambda: ctx.connect().channel().flow(False))
    results["prefetch-size"] = outcome(lambda: ctx.connect().channel().basic_qos(prefetch_size=10))
    results["recover-false"] = outcome(lambda: ctx.connect().channel().basic_recover(requeue=False))
    results["wrong-password"] = outcome(
        lambda: ctx.connect(credentials=pika.PlainCredentials("guest", "nope"))
    )
    results["unknown-vhost"] = outcome(lambda: ctx.connect(virtual_host="nope"))
    survivor = ctx.connect()
    results["others-unaffected"] = survivor.channel().queue_declare("", exclusive=True).method.queue
    return results


@scenario
def negotiation(ctx: Ctx) -> Observation:
    default = ctx.connect()
    small = ctx.connect(frame_max=8192, channel_max=32, heartbeat=15)
    caps = default._impl.server_properties["capabilities"]
    return {
        "default": [
            default._impl.params.frame_max,
            default._impl.params.channel_max,
            default._impl.params.heartbeat,
        ],
        "small": [small._impl.params.frame_max, small._impl.params.channel_max, small._impl.params.heartbeat],
        "capabilities": caps,
    }
