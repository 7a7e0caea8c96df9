"""Queue class: declare (server-named, counts, passive, flags, exclusive, auto-delete, equivalence) and the
"empty name means the last declared queue" shortcut (bind, purge and delete: test_queue_bind_delete.py)."""

from __future__ import annotations

from typing import Any

import pika
import pika.exceptions
import pytest

from .conftest import ConnectFactory, Janitor
from .helpers import Collector, channel_error, drain_queue, locked_text, pump, queue_exists, wait_until


def test_server_named_queue(channel: Any) -> None:
    ok = channel.queue_declare("", exclusive=True)
    assert ok.method.queue.startswith("amq.gen-")
    assert len(ok.method.queue) > len("amq.gen-")
    assert (ok.method.message_count, ok.method.consumer_count) == (0, 0)
    other = channel.queue_declare("", exclusive=True)
    assert other.method.queue != ok.method.queue


def test_named_queue_declare_ok_echoes_the_name(channel: Any, unique: str) -> None:
    ok = channel.queue_declare(f"{unique}-q", exclusive=True)
    assert ok.method.queue == f"{unique}-q"


def test_declare_ok_counts_ready_messages_and_all_consumers(connect: ConnectFactory, unique: str) -> None:
    connection = connect()
    ch = connection.channel()
    ch.confirm_delivery()  # counts are exact only once the queue has the messages
    queue = ch.queue_declare(f"{unique}-q", exclusive=True).method.queue
    for i in range(4):
        ch.basic_publish("", queue, f"m{i}".encode())
    ok = ch.queue_declare(queue, exclusive=True)
    assert (ok.method.message_count, ok.method.consumer_count) == (4, 0)
    consumer_ch = connection.channel()
    consumer_ch.basic_qos(prefetch_count=1)
    seen = Collector()
    consumer_ch.basic_consume(queue, seen)
    pump(connection, lambda: len(seen) == 1, what="first delivery")
    idle_ch = connection.channel()
    idle_ch.basic_consume(queue, Collector(), auto_ack=False)  # a second consumer: prefetch 0, gets the rest
    pump(
        connection,
        lambda: ch.queue_declare(queue, passive=True).method.message_count == 0,
        what="all delivered",
    )
    ok = ch.queue_declare(queue, passive=True)
    # message_count counts only ready messages; unacked ones are not included.
    assert ok.method.message_count == 0
    assert ok.method.consumer_count == 2


def test_declare_ok_message_count_excludes_unacked(channel: Any, unique: str) -> None:
    channel.confirm_delivery()  # counts are exact only once the queue has the messages
    queue = channel.queue_declare(f"{unique}-q", exclusive=True).method.queue
    for i in range(3):
        channel.basic_publish("", queue, f"m{i}".encode())
    method, _props, _body = channel.basic_get(queue)
    assert method is not None
    assert channel.queue_declare(queue, passive=True).method.message_count == 2


def test_passive_declare_of_existing_queue(channel: Any, unique: str) -> None:
    channel.confirm_delivery()  # counts are exact only once the queue has the messages
    queue = channel.queue_declare(f"{unique}-q", exclusive=True).method.queue
    channel.basic_publish("", queue, b"x")
    ok = channel.queue_declare(queue, passive=True)
    assert (ok.method.queue, ok.method.message_count, ok.method.consumer_count) == (queue, 1, 0)
    # passive ignores every other flag
    channel.queue_declare(queue, passive=True, durable=True, auto_delete=True, arguments={"x-max-length": 1})


def test_passive_declare_of_missing_queue_is_404(channel: Any, unique: str) -> None:
    name = f"{unique}-missing"
    assert channel_error(channel, "queue_declare", name, passive=True) == (
        404,
        f"NOT_FOUND - no queue '{name}' in vhost '/'",
    )


def test_durable_queue(connection: pika.BlockingConnection, janitor: Janitor, unique: str) -> None:
    ch = connection.channel()
    name = janitor.declare_queue(ch, f"{unique}-durable", durable=True)
    ch.queue_declare(name, durable=True)
    assert channel_error(ch, "queue_declare", name) == (
        406,
        f"PRECONDITION_FAILED - inequivalent arg 'durable' for queue '{name}' in vhost '/': "
        "received 'false' but current is 'true'",
    )


@pytest.mark.parametrize(
    ("first", "second", "text"),
    [
        (
            {},
            {"durable": True},
            "inequivalent arg 'durable' for queue '{q}' in vhost '/': received 'true' but current is 'false'",
        ),
        (
            {},
            {"auto_delete": True},
            "inequivalent arg 'auto_delete' for queue '{q}' in vhost '/': "
            "received 'true' but current is 'false'",
        ),
        (
            {"arguments": {"x-message-ttl": 1000}},
            {"arguments": {"x-message-ttl": 2000}},
            "inequivalent arg 'x-message-ttl' for queue '{q}' in vhost '/': "
            "received '2000' but current is '1000'",
        ),
        (
            {"arguments": {"x-max-length": 10}},
            {},
            "inequivalent arg 'x-max-length' for queue '{q}' in vhost '/': "
            "received none but current is the value '10' of type 'signedint'",
        ),
        (
            {},
            {"arguments": {"x-max-length": 10}},
            "inequivalent arg 'x-max-length' for queue '{q}' in vhost '/': "
            "received the value '10' of type 'signedint' but current is none",
        ),
        (
            {"arguments": {"x-dead-letter-exchange": "dlx1"}},
            {"arguments": {"x-dead-letter-exchange": "dlx2"}},
            "inequivalent arg 'x-dead-letter-exchange' for queue '{q}' in vhost '/': "
            "received 'dlx2' but current is 'dlx1'",
        ),
    ],
    ids=["durable", "auto-delete", "ttl-changed", "arg-removed", "arg-added", "dlx-changed"],
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
    name = janitor.declare_queue(ch, f"{unique}-q", **first)
    assert channel_error(ch, "queue_declare", name, **second) == (
        406,
        "PRECONDITION_FAILED - " + text.format(q=name),
    )
    assert connection.is_open


def test_redeclare_with_unrelated_x_arguments_is_fine(
    connection: pika.BlockingConnection, janitor: Janitor, unique: str
) -> None:
    # Arguments RabbitMQ does not know are not compared.
    ch = connection.channel()
    name = janitor.declare_queue(ch, f"{unique}-q", arguments={"x-custom-thing": "a"})
    ch.queue_declare(name, arguments={"x-custom-thing": "b"})
    ch.queue_declare(name)
    assert ch.is_open


def test_redeclaring_a_non_exclusive_queue_as_exclusive_is_405(
    connection: pika.BlockingConnection, janitor: Janitor, unique: str
) -> None:
    ch = connection.channel()
    name = janitor.declare_queue(ch, f"{unique}-q")
    assert channel_error(ch, "queue_declare", name, exclusive=True) == (405, locked_text(name))


def test_amq_prefixed_queue_name_is_403(channel: Any, unique: str) -> None:
    name = f"amq.{unique}"
    assert channel_error(channel, "queue_declare", name) == (
        403,
        f"ACCESS_REFUSED - queue name '{name}' contains reserved prefix 'amq.*'",
    )


@pytest.mark.parametrize(
    ("call", "args", "kwargs"),
    [
        ("queue_declare", ("{q}",), {}),
        ("queue_declare", ("{q}",), {"passive": True}),
        ("queue_declare", ("{q}",), {"exclusive": True}),
        ("basic_consume", ("{q}", Collector()), {}),
        ("basic_get", ("{q}",), {}),
        ("queue_purge", ("{q}",), {}),
        ("queue_delete", ("{q}",), {}),
        ("queue_bind", ("{q}", "amq.direct"), {"routing_key": "k"}),
    ],
    ids=["declare", "passive", "declare-exclusive", "consume", "get", "purge", "delete", "bind"],
)
def test_exclusive_queue_is_405_from_another_connection(
    connect: ConnectFactory, unique: str, call: str, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> None:
    owner = connect()
    name = owner.channel().queue_declare(f"{unique}-excl", exclusive=True).method.queue
    intruder = connect().channel()
    real_args = tuple(a.format(q=name) if isinstance(a, str) else a for a in args)
    assert channel_error(intruder, call, *real_args, **kwargs) == (405, locked_text(name))
    assert queue_exists(owner, name)


def test_unbinding_another_connections_exclusive_queue(connect: ConnectFactory, unique: str) -> None:
    owner = connect()
    owner_ch = owner.channel()
    name = owner_ch.queue_declare(f"{unique}-excl", exclusive=True).method.queue
    owner_ch.queue_bind(name, "amq.direct", routing_key=f"{unique}-k")
    intruder = connect()
    # RabbitMQ looks the binding up first: unbinding a binding that does not exist is a no-op, even here.
    intruder.channel().queue_unbind(name, "amq.direct", routing_key=f"{unique}-other")
    assert channel_error(
        intruder.channel(), "queue_unbind", name, "amq.direct", routing_key=f"{unique}-k"
    ) == (
        405,
        locked_text(name),
    )
    owner_ch.basic_publish("amq.direct", f"{unique}-k", b"still bound")
    assert drain_queue(owner_ch, name) == [b"still bound"]


def test_publishing_into_another_connections_exclusive_queue_is_allowed(
    connect: ConnectFactory, unique: str
) -> None:
    owner = connect()
    owner_ch = owner.channel()
    name = owner_ch.queue_declare(f"{unique}-excl", exclusive=True).method.queue
    publisher = connect().channel()
    publisher.confirm_delivery()
    publisher.basic_publish("", name, b"from outside")
    assert drain_queue(owner_ch, name) == [b"from outside"]


def test_exclusive_queue_is_usable_from_another_channel_of_the_same_connection(
    connection: pika.BlockingConnection, unique: str
) -> None:
    name = connection.channel().queue_declare(f"{unique}-excl", exclusive=True).method.queue
    other = connection.channel()
    other.queue_declare(name, passive=True)
    other.basic_publish("", name, b"x")
    assert drain_queue(other, name) == [b"x"]


def test_exclusive_queue_is_deleted_when_its_connection_closes(connect: ConnectFactory, unique: str) -> None:
    owner = connect()
    name = owner.channel().queue_declare(f"{unique}-excl", exclusive=True).method.queue
    observer = connect()
    assert queue_exists(observer, name)
    owner.close()
    wait_until(lambda: not queue_exists(observer, name), what="exclusive queue deletion")


def test_auto_delete_queue_goes_when_last_consumer_cancels(
    connection: pika.BlockingConnection, janitor: Janitor, unique: str
) -> None:
    ch = connection.channel()
    name = janitor.declare_queue(ch, f"{unique}-ad", auto_delete=True)
    assert queue_exists(connection, name)  # no consumer yet: it stays
    tag1 = ch.basic_consume(name, Collector())
    tag2 = ch.basic_consume(name, Collector())
    ch.basic_cancel(tag1)
    assert queue_exists(connection, name)
    ch.basic_cancel(tag2)
    wait_until(lambda: not queue_exists(connection, name), what="auto-delete queue removal")


def test_auto_delete_queue_goes_when_consumer_channel_closes(
    connection: pika.BlockingConnection, janitor: Janitor, unique: str
) -> None:
    ch = connection.channel()
    name = janitor.declare_queue(ch, f"{unique}-ad", auto_delete=True)
    consumer_ch = connection.channel()
    consumer_ch.basic_consume(name, Collector())
    consumer_ch.close()
    wait_until(lambda: not queue_exists(connection, name), what="auto-delete queue removal")


def test_empty_queue_name_means_last_declared_on_this_channel(channel: Any, unique: str) -> None:
    queue = channel.queue_declare(f"{unique}-q", exclusive=True).method.queue
    channel.queue_bind("", "amq.direct", routing_key=f"{unique}-rk")
    channel.basic_publish("amq.direct", f"{unique}-rk", b"1")
    assert channel.queue_purge("").method.message_count == 1
    channel.basic_publish("amq.direct", f"{unique}-rk", b"2")
    method, _props, body = channel.basic_get("", auto_ack=True)
    assert method is not None
    assert body == b"2"
    channel.queue_unbind("", "amq.direct", routing_key=f"{unique}-rk")
    channel.basic_publish("amq.direct", f"{unique}-rk", b"3")
    assert drain_queue(channel, queue) == []
    assert channel.queue_delete("").method.message_count == 0


def test_bind_with_empty_queue_and_routing_key_uses_the_last_queue_name(channel: Any, unique: str) -> None:
    queue = channel.queue_declare(f"{unique}-q", exclusive=True).method.queue
    channel.queue_bind("", "amq.direct", routing_key="")
    channel.basic_publish("amq.direct", queue, b"by-name")
    assert drain_queue(channel, queue) == [b"by-name"]


def test_last_declared_queue_name_survives_its_deletion(channel: Any, unique: str) -> None:
    queue = channel.queue_declare(f"{unique}-q", exclusive=True).method.queue
    channel.queue_delete("")
    assert channel_error(channel, "queue_bind", "", "amq.direct", routing_key="k") == (
        404,
        f"NOT_FOUND - no queue '{queue}' in vhost '/'",
    )


@pytest.mark.parametrize(
    ("call", "args", "kwargs"),
    [
        ("queue_bind", ("", "amq.direct"), {"routing_key": "k"}),
        ("queue_unbind", ("", "amq.direct"), {"routing_key": "k"}),
        ("queue_purge", ("",), {}),
        ("queue_delete", ("",), {}),
        ("basic_consume", ("", Collector()), {}),
        ("basic_get", ("",), {}),
    ],
    ids=["bind", "unbind", "purge", "delete", "consume", "get"],
)
def test_empty_queue_name_without_a_previous_declare_is_404(
    connection: pika.BlockingConnection, call: str, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> None:
    connection.channel().queue_declare("", exclusive=True)  # on another channel: does not count
    ch = connection.channel()
    assert channel_error(ch, call, *args, **kwargs) == (404, "NOT_FOUND - no previously declared queue")


def test_passive_declare_with_empty_name_does_not_use_the_shortcut(channel: Any) -> None:
    channel.queue_declare("", exclusive=True)
    assert channel_error(channel, "queue_declare", "", passive=True) == (
        404,
        "NOT_FOUND - no queue '' in vhost '/'",
    )
