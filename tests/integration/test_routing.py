"""Routing: direct, fanout, topic and headers exchanges, exchange-to-exchange bindings (with cycles) and
alternate
exchanges (chains, loops, mandatory)."""

from __future__ import annotations

from typing import Any

import pika
import pytest

from .conftest import Janitor
from .helpers import drain_queue, new_queue, pump


@pytest.fixture
def ch(connection: pika.BlockingConnection) -> Any:
    """A confirm-mode channel: every publish has been routed by the time basic_publish returns."""
    channel = connection.channel()
    channel.confirm_delivery()
    return channel


def test_default_exchange_routes_by_exact_queue_name(ch: Any, unique: str) -> None:
    queue = ch.queue_declare(f"{unique}-Name", exclusive=True).method.queue
    ch.basic_publish("", f"{unique}-Name", b"exact")
    ch.basic_publish("", f"{unique}-name", b"case differs")
    ch.basic_publish("", f"{unique}-Name ", b"trailing space")
    assert drain_queue(ch, queue) == [b"exact"]


def test_direct_exchange_routes_by_key(ch: Any, janitor: Janitor, unique: str) -> None:
    exchange = janitor.declare_exchange(ch, f"{unique}-direct", "direct")
    q_info, q_err, q_both = new_queue(ch), new_queue(ch), new_queue(ch)
    ch.queue_bind(q_info, exchange, "info")
    ch.queue_bind(q_err, exchange, "error")
    ch.queue_bind(q_both, exchange, "info")
    ch.queue_bind(q_both, exchange, "error")
    ch.queue_bind(q_both, exchange, "")
    for key in ["info", "error", "warning", "", "INFO"]:
        ch.basic_publish(exchange, key, key.encode() or b"<empty>")
    assert drain_queue(ch, q_info) == [b"info"]
    assert drain_queue(ch, q_err) == [b"error"]
    assert drain_queue(ch, q_both) == [b"info", b"error", b"<empty>"]


def test_queue_bound_twice_gets_one_copy(ch: Any, janitor: Janitor, unique: str) -> None:
    fanout = janitor.declare_exchange(ch, f"{unique}-fanout", "fanout")
    topic = janitor.declare_exchange(ch, f"{unique}-topic", "topic")
    queue = new_queue(ch)
    ch.queue_bind(queue, fanout, "a")
    ch.queue_bind(queue, fanout, "b")
    ch.queue_bind(queue, topic, "x.*")
    ch.queue_bind(queue, topic, "#")
    ch.queue_bind(queue, topic, "x.y")
    ch.basic_publish(fanout, "whatever", b"f")
    ch.basic_publish(topic, "x.y", b"t")
    assert drain_queue(ch, queue) == [b"f", b"t"]


def test_fanout_ignores_routing_keys(ch: Any, janitor: Janitor, unique: str) -> None:
    exchange = janitor.declare_exchange(ch, f"{unique}-fanout", "fanout")
    queues = [new_queue(ch) for _ in range(3)]
    for i, queue in enumerate(queues):
        ch.queue_bind(queue, exchange, f"key-{i}")
    ch.basic_publish(exchange, "anything", b"1")
    ch.basic_publish(exchange, "", b"2")
    for queue in queues:
        assert drain_queue(ch, queue) == [b"1", b"2"]


# (binding key, routing key, matches?) -- checked against RabbitMQ.
TOPIC_CASES = [
    ("a.b.c", "a.b.c", True),
    ("a.b.c", "a.b", False),
    ("a.b.c", "a.b.c.d", False),
    ("a.*.c", "a.b.c", True),
    ("a.*.c", "a.c", False),
    ("a.*.c", "a.b.b.c", False),
    ("*", "a", True),
    ("*", "", False),
    ("*", "a.b", False),
    ("*.*", "a.b", True),
    ("*.*", "a", False),
    ("#", "", True),
    ("#", "a", True),
    ("#", "a.b.c", True),
    ("a.#", "a", True),
    ("a.#", "a.b", True),
    ("a.#", "a.b.c", True),
    ("a.#", "b.a", False),
    ("#.a", "a", True),
    ("#.a", "x.y.a", True),
    ("#.a", "a.x", False),
    ("a.#.c", "a.c", True),
    ("a.#.c", "a.b.c", True),
    ("a.#.c", "a.b.x.c", True),
    ("a.#.c", "a.b.x.d", False),
    ("#.#", "", True),
    ("#.#", "a.b", True),
    ("#.*", "", False),
    ("#.*", "a", True),
    ("*.#", "a", True),
    ("*.#", "", False),
    ("a.*.#", "a", False),
    ("a.*.#", "a.b", True),
    ("a.*.#", "a.b.c.d", True),
    ("#.b.#", "b", True),
    ("#.b.#", "a.b.c", True),
    ("#.b.#", "a.c", False),
    ("", "", True),
    ("", "a", False),
    ("a..b", "a..b", True),
    ("a.*.b", "a..b", True),
    ("a.", "a.", True),
    ("a.", "a", False),
    ("a.*", "a.", True),
    ("*.", ".", True),
    ("a.b", "A.B", False),
    ("a*", "a*", True),
    ("a*", "ab", False),
    ("a#", "abc", False),
    ("ü.*", "ü.x", True),
]


def test_topic_matching(ch: Any, janitor: Janitor, unique: str) -> None:
    exchange = janitor.declare_exchange(ch, f"{unique}-topic", "topic")
    observed = []
    for index, (binding_key, routing_key, _expected) in enumerate(TOPIC_CASES):
        queue = new_queue(ch)
        ch.queue_bind(queue, exchange, binding_key)
        ch.basic_publish(exchange, routing_key, str(index).encode())
        observed.append((binding_key, routing_key, drain_queue(ch, queue) == [str(index).encode()]))
        ch.queue_unbind(queue, exchange, binding_key)
    assert observed == TOPIC_CASES


def test_topic_routes_one_message_to_many_patterns(ch: Any, janitor: Janitor, unique: str) -> None:
    exchange = janitor.declare_exchange(ch, f"{unique}-topic", "topic")
    patterns = ["*.orange.*", "*.*.rabbit", "lazy.#", "#", "quick.#.fox"]
    queues = {p: new_queue(ch) for p in patterns}
    for pattern, queue in queues.items():
        ch.queue_bind(queue, exchange, pattern)
    keys = [
        "quick.orange.rabbit",
        "lazy.orange.elephant",
        "quick.orange.fox",
        "lazy.brown.fox",
        "quick.brown.fox",
    ]
    for key in keys:
        ch.basic_publish(exchange, key, key.encode())
    got = {p: [b.decode() for b in drain_queue(ch, q)] for p, q in queues.items()}
    assert got == {
        "*.orange.*": ["quick.orange.rabbit", "lazy.orange.elephant", "quick.orange.fox"],
        "*.*.rabbit": ["quick.orange.rabbit"],
        "lazy.#": ["lazy.orange.elephant", "lazy.brown.fox"],
        "#": keys,
        "quick.#.fox": ["quick.orange.fox", "quick.brown.fox"],
    }


def test_topic_unbind_removes_only_that_pattern(ch: Any, janitor: Janitor, unique: str) -> None:
    exchange = janitor.declare_exchange(ch, f"{unique}-topic", "topic")
    queue = new_queue(ch)
    ch.queue_bind(queue, exchange, "a.*")
    ch.queue_bind(queue, exchange, "a.#")
    ch.queue_unbind(queue, exchange, "a.*")
    ch.basic_publish(exchange, "a.b", b"still via a.#")
    ch.queue_unbind(queue, exchange, "a.#")
    ch.basic_publish(exchange, "a.b", b"gone")
    assert drain_queue(ch, queue) == [b"still via a.#"]


# (binding arguments, message headers, matches?) -- checked against RabbitMQ.
HEADERS_CASES: list[tuple[dict[str, Any], dict[str, Any] | None, bool]] = [
    ({"x-match": "all", "a": "1", "b": "2"}, {"a": "1", "b": "2"}, True),
    ({"x-match": "all", "a": "1", "b": "2"}, {"a": "1", "b": "2", "c": "3"}, True),
    ({"x-match": "all", "a": "1", "b": "2"}, {"a": "1"}, False),
    ({"x-match": "all", "a": "1", "b": "2"}, {"a": "1", "b": "x"}, False),
    ({"x-match": "any", "a": "1", "b": "2"}, {"a": "1"}, True),
    ({"x-match": "any", "a": "1", "b": "2"}, {"b": "2", "z": "9"}, True),
    ({"x-match": "any", "a": "1", "b": "2"}, {"a": "x", "b": "y"}, False),
    ({"x-match": "any", "a": "1"}, None, False),
    ({"a": "1", "b": "2"}, {"a": "1"}, False),  # x-match defaults to all
    ({"a": "1", "b": "2"}, {"a": "1", "b": "2"}, True),
    ({"x-match": "all"}, None, True),  # no conditions: everything matches
    ({"x-match": "all"}, {"q": "r"}, True),
    ({"x-match": "any"}, {"q": "r"}, False),
    ({"x-match": "all", "n": 5}, {"n": 5}, True),
    ({"x-match": "all", "n": 5}, {"n": "5"}, False),  # typed comparison
    ({"x-match": "all", "s": "5"}, {"s": 5}, False),
    ({"x-match": "all", "t": True}, {"t": True}, True),
    ({"x-match": "all", "t": True}, {"t": False}, False),
    ({"x-match": "all", "a": "1", "x-ignored": "zzz"}, {"a": "1"}, True),  # x- keys in bindings are ignored
    ({"x-match": "any", "x-only": "v"}, {"x-only": "v"}, False),
    ({"x-match": "all", "a": "1"}, {"a": "1", "x-extra": "y"}, True),
]


def test_headers_matching(ch: Any, janitor: Janitor, unique: str) -> None:
    exchange = janitor.declare_exchange(ch, f"{unique}-headers", "headers")
    observed = []
    for index, (arguments, headers, _expected) in enumerate(HEADERS_CASES):
        queue = new_queue(ch)
        ch.queue_bind(queue, exchange, "", arguments=arguments)
        ch.basic_publish(
            exchange, "ignored", str(index).encode(), properties=pika.BasicProperties(headers=headers)
        )
        observed.append((arguments, headers, drain_queue(ch, queue) == [str(index).encode()]))
        ch.queue_unbind(queue, exchange, "", arguments=arguments)
    assert observed == HEADERS_CASES


def test_headers_binding_is_identified_by_its_arguments(ch: Any, janitor: Janitor, unique: str) -> None:
    exchange = janitor.declare_exchange(ch, f"{unique}-headers", "headers")
    queue = new_queue(ch)
    ch.queue_bind(queue, exchange, "", arguments={"x-match": "any", "a": "1"})
    ch.queue_bind(queue, exchange, "", arguments={"x-match": "any", "b": "2"})
    ch.queue_unbind(queue, exchange, "", arguments={"x-match": "any", "a": "1"})
    ch.basic_publish(exchange, "", b"a", properties=pika.BasicProperties(headers={"a": "1"}))
    ch.basic_publish(exchange, "", b"b", properties=pika.BasicProperties(headers={"b": "2"}))
    assert drain_queue(ch, queue) == [b"b"]


def test_amq_match_and_amq_headers_are_headers_exchanges(ch: Any, unique: str) -> None:
    queue = new_queue(ch)
    ch.queue_bind(queue, "amq.match", "", arguments={"x-match": "all", unique: "yes"})
    ch.queue_bind(queue, "amq.headers", "", arguments={"x-match": "all", unique: "also"})
    ch.basic_publish("amq.match", "", b"1", properties=pika.BasicProperties(headers={unique: "yes"}))
    ch.basic_publish("amq.headers", "", b"2", properties=pika.BasicProperties(headers={unique: "also"}))
    ch.basic_publish("amq.headers", "", b"3", properties=pika.BasicProperties(headers={unique: "no"}))
    assert drain_queue(ch, queue) == [b"1", b"2"]


def test_exchange_to_exchange_chain_and_fan_in(ch: Any, janitor: Janitor, unique: str) -> None:
    top = janitor.declare_exchange(ch, f"{unique}-top", "topic")
    middle = janitor.declare_exchange(ch, f"{unique}-middle", "direct")
    bottom = janitor.declare_exchange(ch, f"{unique}-bottom", "fanout")
    ch.exchange_bind(destination=middle, source=top, routing_key="logs.#")
    ch.exchange_bind(destination=bottom, source=middle, routing_key="logs.error")
    q_middle, q_bottom, q_both = new_queue(ch), new_queue(ch), new_queue(ch)
    ch.queue_bind(q_middle, middle, "logs.info")
    ch.queue_bind(q_bottom, bottom)
    ch.queue_bind(q_both, top, "#")
    ch.queue_bind(q_both, bottom)
    for key in ["logs.info", "logs.error", "other"]:
        ch.basic_publish(top, key, key.encode())
    assert drain_queue(ch, q_middle) == [b"logs.info"]
    assert drain_queue(ch, q_bottom) == [b"logs.error"]
    assert drain_queue(ch, q_both) == [b"logs.info", b"logs.error", b"other"]  # one copy each


def test_exchange_to_exchange_cycle_delivers_one_copy(ch: Any, janitor: Janitor, unique: str) -> None:
    e1 = janitor.exchange(f"{unique}-e1")
    e2 = janitor.exchange(f"{unique}-e2")
    e3 = janitor.exchange(f"{unique}-e3")
    for name in (e1, e2, e3):
        ch.exchange_declare(name, "fanout")
    ch.exchange_bind(destination=e2, source=e1)
    ch.exchange_bind(destination=e3, source=e2)
    ch.exchange_bind(destination=e1, source=e3)
    queues = {name: new_queue(ch) for name in (e1, e2, e3)}
    for name, queue in queues.items():
        ch.queue_bind(queue, name)
    ch.basic_publish(e2, "", b"once")
    for queue in queues.values():
        assert drain_queue(ch, queue) == [b"once"]


def test_exchange_bound_to_itself(ch: Any, janitor: Janitor, unique: str) -> None:
    exchange = janitor.declare_exchange(ch, f"{unique}-self", "fanout")
    ch.exchange_bind(destination=exchange, source=exchange)
    queue = new_queue(ch)
    ch.queue_bind(queue, exchange)
    ch.basic_publish(exchange, "", b"once")
    assert drain_queue(ch, queue) == [b"once"]


def test_delivery_reports_the_exchange_published_to(ch: Any, janitor: Janitor, unique: str) -> None:
    source = janitor.declare_exchange(ch, f"{unique}-src", "fanout")
    destination = janitor.declare_exchange(ch, f"{unique}-dst", "fanout")
    ch.exchange_bind(destination=destination, source=source)
    queue = new_queue(ch)
    ch.queue_bind(queue, destination)
    ch.basic_publish(source, "rk", b"x")
    method, _props, _body = ch.basic_get(queue, auto_ack=True)
    assert method is not None
    assert (method.exchange, method.routing_key) == (source, "rk")


def test_alternate_exchange_gets_only_unroutable_messages(ch: Any, janitor: Janitor, unique: str) -> None:
    ae = janitor.declare_exchange(ch, f"{unique}-ae", "fanout")
    main = janitor.declare_exchange(ch, f"{unique}-main", "direct", arguments={"alternate-exchange": ae})
    q_main, q_ae = new_queue(ch), new_queue(ch)
    ch.queue_bind(q_main, main, "known")
    ch.queue_bind(q_ae, ae)
    ch.basic_publish(main, "known", b"routed")
    ch.basic_publish(main, "unknown", b"unroutable")
    assert drain_queue(ch, q_main) == [b"routed"]
    method, _props, body = ch.basic_get(q_ae, auto_ack=True)
    assert method is not None
    assert (body, method.exchange, method.routing_key) == (b"unroutable", main, "unknown")


def test_alternate_exchange_chain(ch: Any, janitor: Janitor, unique: str) -> None:
    ae2 = janitor.declare_exchange(ch, f"{unique}-ae2", "fanout")
    ae1 = janitor.declare_exchange(ch, f"{unique}-ae1", "direct", arguments={"alternate-exchange": ae2})
    main = janitor.declare_exchange(ch, f"{unique}-main", "direct", arguments={"alternate-exchange": ae1})
    q_ae1, q_ae2 = new_queue(ch), new_queue(ch)
    ch.queue_bind(q_ae1, ae1, "k1")
    ch.queue_bind(q_ae2, ae2)
    ch.basic_publish(main, "k1", b"to-ae1")
    ch.basic_publish(main, "k2", b"to-ae2")
    assert drain_queue(ch, q_ae1) == [b"to-ae1"]
    assert drain_queue(ch, q_ae2) == [b"to-ae2"]


def test_alternate_exchange_loop_ends_and_mandatory_is_returned(
    connection: pika.BlockingConnection, janitor: Janitor, unique: str
) -> None:
    ch = connection.channel()
    e1, e2 = f"{unique}-e1", f"{unique}-e2"
    janitor.declare_exchange(ch, e1, "direct", arguments={"alternate-exchange": e2})
    janitor.declare_exchange(ch, e2, "direct", arguments={"alternate-exchange": e1})
    returned: list[Any] = []
    ch.add_on_return_callback(lambda _c, method, _p, body: returned.append((method.reply_code, body)))
    ch.basic_publish(e1, "nowhere", b"looping", mandatory=True)
    pump(connection, lambda: len(returned) == 1, what="basic.return")
    assert returned == [(312, b"looping")]
    assert ch.is_open


def test_mandatory_message_routed_by_alternate_exchange_is_not_returned(
    connection: pika.BlockingConnection, janitor: Janitor, unique: str
) -> None:
    ch = connection.channel()
    ch.confirm_delivery()
    ae = janitor.declare_exchange(ch, f"{unique}-ae", "fanout")
    main = janitor.declare_exchange(ch, f"{unique}-main", "direct", arguments={"alternate-exchange": ae})
    queue = new_queue(ch)
    ch.queue_bind(queue, ae)
    ch.basic_publish(main, "unknown", b"x", mandatory=True)  # would raise UnroutableError if returned
    assert drain_queue(ch, queue) == [b"x"]


def test_missing_alternate_exchange_means_unroutable(
    connection: pika.BlockingConnection, janitor: Janitor, unique: str
) -> None:
    ch = connection.channel()
    main = janitor.declare_exchange(
        ch, f"{unique}-main", "direct", arguments={"alternate-exchange": f"{unique}-not-declared"}
    )
    returned: list[Any] = []
    ch.add_on_return_callback(lambda _c, method, _p, _b: returned.append(method.reply_code))
    ch.basic_publish(main, "nowhere", b"x", mandatory=True)
    pump(connection, lambda: len(returned) == 1, what="basic.return")
    assert returned == [312]


def test_alternate_exchange_of_an_exchange_reached_by_e2e_binding(
    ch: Any, janitor: Janitor, unique: str
) -> None:
    # Every exchange visited during routing consults its own alternate exchange when it routes nowhere,
    # also when it was reached through an exchange-to-exchange binding and other queues got the message.
    ae = janitor.declare_exchange(ch, f"{unique}-ae", "fanout")
    inner = janitor.declare_exchange(ch, f"{unique}-inner", "direct", arguments={"alternate-exchange": ae})
    outer = janitor.declare_exchange(ch, f"{unique}-outer", "fanout")
    ch.exchange_bind(destination=inner, source=outer)
    q_ae, q_outer, q_inner = new_queue(ch), new_queue(ch), new_queue(ch)
    ch.queue_bind(q_ae, ae)
    ch.queue_bind(q_inner, inner, "known")
    ch.basic_publish(outer, "unknown", b"via-outer")
    ch.basic_publish(inner, "unknown", b"direct-to-inner")
    ch.basic_publish(outer, "known", b"routed-by-inner")
    ch.queue_bind(q_outer, outer)
    ch.basic_publish(outer, "unknown", b"outer-has-a-queue")
    assert drain_queue(ch, q_ae) == [b"via-outer", b"direct-to-inner", b"outer-has-a-queue"]
    assert drain_queue(ch, q_inner) == [b"routed-by-inner"]
    assert drain_queue(ch, q_outer) == [b"outer-has-a-queue"]
