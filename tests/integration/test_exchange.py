"""Exchange class: declare (types, passive, equivalence, reserved names), delete, internal, auto-delete,
exchange-to-exchange bindings."""

from __future__ import annotations

from typing import Any

import pika
import pika.exceptions
import pytest

from .conftest import ConnectFactory, Janitor
from .helpers import channel_error, drain_queue, exchange_exists, new_queue, wait_until

ChannelFactory = Any


@pytest.mark.parametrize("kind", ["direct", "fanout", "topic", "headers"])
def test_declare_each_type_then_redeclare_and_passive(
    connection: pika.BlockingConnection, janitor: Janitor, unique: str, kind: str
) -> None:
    ch = connection.channel()
    name = janitor.declare_exchange(ch, f"{unique}-{kind}", kind)
    ch.exchange_declare(name, kind)  # identical redeclare is fine
    ch.exchange_declare(name, passive=True)
    ch.exchange_declare(
        name, "fanout" if kind != "fanout" else "direct", passive=True
    )  # passive ignores type
    assert ch.is_open


def test_declare_durable_exchange(connection: pika.BlockingConnection, janitor: Janitor, unique: str) -> None:
    ch = connection.channel()
    name = janitor.declare_exchange(ch, f"{unique}-durable", "topic", durable=True)
    ch.exchange_declare(name, "topic", durable=True)


def test_passive_declare_of_missing_exchange_is_404(channel: Any, unique: str) -> None:
    name = f"{unique}-missing"
    assert channel_error(channel, "exchange_declare", name, passive=True) == (
        404,
        f"NOT_FOUND - no exchange '{name}' in vhost '/'",
    )


@pytest.mark.parametrize(
    ("first", "second", "text"),
    [
        (
            {"exchange_type": "direct"},
            {"exchange_type": "fanout"},
            "inequivalent arg 'type' for exchange '{x}' in vhost '/': "
            "received 'fanout' but current is 'direct'",
        ),
        (
            {"exchange_type": "direct"},
            {"exchange_type": "direct", "durable": True},
            "inequivalent arg 'durable' for exchange '{x}' in vhost '/': "
            "received 'true' but current is 'false'",
        ),
        (
            {"exchange_type": "topic", "durable": True},
            {"exchange_type": "topic"},
            "inequivalent arg 'durable' for exchange '{x}' in vhost '/': "
            "received 'false' but current is 'true'",
        ),
        (
            {"exchange_type": "direct"},
            {"exchange_type": "direct", "auto_delete": True},
            "inequivalent arg 'auto_delete' for exchange '{x}' in vhost '/': "
            "received 'true' but current is 'false'",
        ),
        (
            {"exchange_type": "direct"},
            {"exchange_type": "direct", "internal": True},
            "inequivalent arg 'internal' for exchange '{x}' in vhost '/': "
            "received 'true' but current is 'false'",
        ),
        (
            {"exchange_type": "direct", "arguments": {"alternate-exchange": "ae"}},
            {"exchange_type": "direct"},
            "inequivalent arg 'alternate-exchange' for exchange '{x}' in vhost '/': "
            "received none but current is the value 'ae' of type 'longstr'",
        ),
        (
            {"exchange_type": "direct"},
            {"exchange_type": "direct", "arguments": {"alternate-exchange": "ae"}},
            "inequivalent arg 'alternate-exchange' for exchange '{x}' in vhost '/': "
            "received the value 'ae' of type 'longstr' but current is none",
        ),
        (
            {"exchange_type": "direct", "arguments": {"alternate-exchange": "ae1"}},
            {"exchange_type": "direct", "arguments": {"alternate-exchange": "ae2"}},
            "inequivalent arg 'alternate-exchange' for exchange '{x}' in vhost '/': "
            "received 'ae2' but current is 'ae1'",
        ),
    ],
    ids=[
        "type",
        "durable-true",
        "durable-false",
        "auto-delete",
        "internal",
        "ae-removed",
        "ae-added",
        "ae-changed",
    ],
)
def test_inequivalent_redeclare_is_406(
    connection: pika.BlockingConnection,
    janitor: Janitor,
    unique: str,
    first: dict[str, Any],
    second: dict[str, Any],
    text: str,
) -> None:
    ch = connection.channel()
    name = janitor.declare_exchange(ch, f"{unique}-x", **first)
    code, reply = channel_error(ch, "exchange_declare", name, **second)
    assert (code, reply) == (406, "PRECONDITION_FAILED - " + text.format(x=name))
    assert connection.is_open


def test_inequivalent_redeclare_leaves_the_exchange_unchanged(
    connection: pika.BlockingConnection, janitor: Janitor, unique: str
) -> None:
    ch = connection.channel()
    name = janitor.declare_exchange(ch, f"{unique}-x", "fanout")
    channel_error(ch, "exchange_declare", name, "direct")
    ch = connection.channel()
    queue = new_queue(ch)
    ch.queue_bind(queue, name, "ignored-by-fanout")
    ch.basic_publish(name, "anything", b"fanned")
    assert drain_queue(ch, queue) == [b"fanned"]


def test_declaring_amq_prefixed_exchange_is_403(channel: Any, unique: str) -> None:
    name = f"amq.{unique}"
    assert channel_error(channel, "exchange_declare", name, "direct") == (
        403,
        f"ACCESS_REFUSED - exchange name '{name}' contains reserved prefix 'amq.*'",
    )


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("amq.direct", "direct"),
        ("amq.fanout", "fanout"),
        ("amq.topic", "topic"),
        ("amq.headers", "headers"),
        ("amq.match", "headers"),
    ],
)
def test_predeclared_exchanges_exist_and_may_be_redeclared_equivalently(
    connection: pika.BlockingConnection, name: str, kind: str
) -> None:
    ch = connection.channel()
    ch.exchange_declare(name, passive=True)
    ch.exchange_declare(name, kind, durable=True)
    assert ch.is_open


def test_amq_rabbitmq_trace_exists(channel: Any) -> None:
    channel.exchange_declare("amq.rabbitmq.trace", passive=True)


def test_deleting_a_system_exchange_is_403(channel: Any) -> None:
    assert channel_error(channel, "exchange_delete", "amq.direct") == (
        403,
        "ACCESS_REFUSED - deletion of system exchange 'amq.direct' in vhost '/' not allowed",
    )


@pytest.mark.parametrize(
    ("call", "args", "kwargs"),
    [
        ("exchange_declare", ("",), {"exchange_type": "direct"}),
        ("exchange_declare", ("",), {"passive": True}),
        ("exchange_delete", ("",), {}),
        ("queue_bind", ("{q}", ""), {"routing_key": "k"}),
        ("queue_unbind", ("{q}", ""), {"routing_key": "k"}),
    ],
    ids=["declare", "passive", "delete", "bind", "unbind"],
)
def test_operations_on_the_default_exchange_are_403(
    connection: pika.BlockingConnection, call: str, args: tuple[str, ...], kwargs: dict[str, Any]
) -> None:
    ch = connection.channel()
    queue = new_queue(ch)
    real_args = tuple(a.format(q=queue) for a in args)
    assert channel_error(ch, call, *real_args, **kwargs) == (
        403,
        "ACCESS_REFUSED - operation not permitted on the default exchange",
    )


def test_unknown_exchange_type_is_406_on_the_channel(
    skip_on_rabbitmq_before_3_13: None, connection: pika.BlockingConnection, unique: str
) -> None:
    # RabbitMQ 3.13 (rabbitmq-server#11214, backported to 3.12.x/3.13.x) answers a channel-level
    # 406 PRECONDITION_FAILED. RabbitMQ 3.10.8 still closed the *connection* with
    # 503 "COMMAND_INVALID - unknown exchange type 'x-nope'".
    ch = connection.channel()
    assert channel_error(ch, "exchange_declare", f"{unique}-x", "x-nope") == (
        406,
        "PRECONDITION_FAILED - unknown exchange type 'x-nope'",
    )
    assert connection.is_open


def test_delete_if_unused_refuses_an_exchange_with_bindings(
    connection: pika.BlockingConnection, janitor: Janitor, unique: str
) -> None:
    ch = connection.channel()
    name = janitor.declare_exchange(ch, f"{unique}-x", "fanout")
    queue = new_queue(ch)
    ch.queue_bind(queue, name)
    assert channel_error(ch, "exchange_delete", name, if_unused=True) == (
        406,
        f"PRECONDITION_FAILED - exchange '{name}' in vhost '/' in use",
    )
    assert exchange_exists(connection, name)


def test_delete_if_unused_counts_exchange_to_exchange_bindings_as_source(
    connection: pika.BlockingConnection, janitor: Janitor, unique: str
) -> None:
    ch = connection.channel()
    source = janitor.declare_exchange(ch, f"{unique}-src", "fanout")
    destination = janitor.declare_exchange(ch, f"{unique}-dst", "fanout")
    ch.exchange_bind(destination=destination, source=source)
    assert channel_error(ch, "exchange_delete", source, if_unused=True)[0] == 406
    # Being the destination of a binding does not make an exchange "used".
    ch = connection.channel()
    ch.exchange_delete(destination, if_unused=True)
    assert not exchange_exists(connection, destination)


def test_delete_if_unused_deletes_an_unbound_exchange(
    connection: pika.BlockingConnection, janitor: Janitor, unique: str
) -> None:
    ch = connection.channel()
    name = janitor.declare_exchange(ch, f"{unique}-x", "direct")
    ch.exchange_delete(name, if_unused=True)
    assert not exchange_exists(connection, name)


def test_delete_removes_bindings(connection: pika.BlockingConnection, janitor: Janitor, unique: str) -> None:
    ch = connection.channel()
    name = janitor.declare_exchange(ch, f"{unique}-x", "fanout")
    queue = new_queue(ch)
    ch.queue_bind(queue, name)
    ch.exchange_delete(name)
    ch.exchange_declare(name, "fanout")
    ch.basic_publish(name, "", b"after re-create")
    assert drain_queue(ch, queue) == []


def test_delete_of_missing_exchange_is_ok(channel: Any, unique: str) -> None:
    channel.exchange_delete(f"{unique}-never-declared")
    channel.exchange_delete(f"{unique}-never-declared", if_unused=True)
    assert channel.is_open


def test_publish_to_internal_exchange_is_403(
    connection: pika.BlockingConnection, janitor: Janitor, unique: str
) -> None:
    ch = connection.channel()
    name = janitor.declare_exchange(ch, f"{unique}-internal", "fanout", internal=True)
    ch.confirm_delivery()
    assert channel_error(ch, "basic_publish", name, "", b"x") == (
        403,
        f"ACCESS_REFUSED - cannot publish to internal exchange '{name}' in vhost '/'",
    )


def test_internal_exchange_still_routes_via_exchange_to_exchange_binding(
    connection: pika.BlockingConnection, janitor: Janitor, unique: str
) -> None:
    ch = connection.channel()
    front = janitor.declare_exchange(ch, f"{unique}-front", "fanout")
    internal = janitor.declare_exchange(ch, f"{unique}-internal", "fanout", internal=True)
    ch.exchange_bind(destination=internal, source=front)
    queue = new_queue(ch)
    ch.queue_bind(queue, internal)
    ch.basic_publish(front, "", b"through")
    assert drain_queue(ch, queue) == [b"through"]


def test_publish_to_missing_exchange_is_404(connection: pika.BlockingConnection, unique: str) -> None:
    ch = connection.channel()
    ch.confirm_delivery()
    name = f"{unique}-missing"
    assert channel_error(ch, "basic_publish", name, "rk", b"x") == (
        404,
        f"NOT_FOUND - no exchange '{name}' in vhost '/'",
    )


def test_auto_delete_exchange_is_deleted_after_last_unbind(
    connection: pika.BlockingConnection, janitor: Janitor, unique: str
) -> None:
    ch = connection.channel()
    name = janitor.declare_exchange(ch, f"{unique}-ad", "direct", auto_delete=True)
    # Never bound: it stays.
    assert exchange_exists(connection, name)
    ch = connection.channel()
    q1 = new_queue(ch)
    q2 = new_queue(ch)
    ch.queue_bind(q1, name, "a")
    ch.queue_bind(q2, name, "b")
    ch.queue_unbind(q1, name, "a")
    assert exchange_exists(connection, name)
    ch = connection.channel()
    ch.queue_unbind(q2, name, "b")
    wait_until(lambda: not exchange_exists(connection, name), what="auto-delete exchange removal")


def test_auto_delete_exchange_is_deleted_when_its_last_bound_queue_goes(
    connection: pika.BlockingConnection, janitor: Janitor, unique: str
) -> None:
    ch = connection.channel()
    name = janitor.declare_exchange(ch, f"{unique}-ad", "fanout", auto_delete=True)
    queue = new_queue(ch)
    ch.queue_bind(queue, name)
    ch.queue_delete(queue)
    wait_until(lambda: not exchange_exists(connection, name), what="auto-delete exchange removal")


def test_exchange_to_exchange_bind_and_unbind_route(
    connection: pika.BlockingConnection, janitor: Janitor, unique: str
) -> None:
    ch = connection.channel()
    source = janitor.declare_exchange(ch, f"{unique}-src", "direct")
    destination = janitor.declare_exchange(ch, f"{unique}-dst", "fanout")
    queue = new_queue(ch)
    ch.queue_bind(queue, destination)
    ch.exchange_bind(destination=destination, source=source, routing_key="go")
    ch.basic_publish(source, "go", b"1")
    ch.basic_publish(source, "stop", b"2")
    assert drain_queue(ch, queue) == [b"1"]
    ch.exchange_unbind(destination=destination, source=source, routing_key="go")
    ch.basic_publish(source, "go", b"3")
    assert drain_queue(ch, queue) == []


def test_exchange_bind_to_missing_exchange_is_404(
    connection: pika.BlockingConnection, janitor: Janitor, unique: str
) -> None:
    ch = connection.channel()
    existing = janitor.declare_exchange(ch, f"{unique}-x", "direct")
    missing = f"{unique}-missing"
    assert channel_error(ch, "exchange_bind", destination=existing, source=missing, routing_key="k") == (
        404,
        f"NOT_FOUND - no exchange '{missing}' in vhost '/'",
    )
    ch = connection.channel()
    assert channel_error(ch, "exchange_bind", destination=missing, source=existing, routing_key="k") == (
        404,
        f"NOT_FOUND - no exchange '{missing}' in vhost '/'",
    )


def test_exchange_unbind_of_missing_binding_is_ok(channel: Any, unique: str) -> None:
    channel.exchange_unbind(destination="amq.fanout", source="amq.direct", routing_key=f"{unique}-none")
    channel.exchange_unbind(destination=f"{unique}-nope", source=f"{unique}-nope2", routing_key="k")
    assert channel.is_open


def test_exchange_declare_errors_do_not_close_the_connection(connect: ConnectFactory, unique: str) -> None:
    connection = connect()
    for _ in range(3):
        ch = connection.channel()
        channel_error(ch, "exchange_declare", f"{unique}-missing", passive=True)
    assert connection.is_open
