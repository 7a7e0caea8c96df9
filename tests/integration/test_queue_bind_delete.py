"""Queue class: queue.bind / queue.unbind, queue.purge and queue.delete (counts, if-unused, if-empty, missing
queues and exchanges)."""

from __future__ import annotations

from typing import Any

import pika
import pika.exceptions
import pytest

from .helpers import Collector, channel_error, drain_queue, queue_exists


def test_bind_and_unbind(channel: Any, unique: str) -> None:
    queue = channel.queue_declare(f"{unique}-q", exclusive=True).method.queue
    channel.queue_bind(queue, "amq.direct", routing_key=f"{unique}-a")
    channel.queue_bind(queue, "amq.direct", routing_key=f"{unique}-a")  # idempotent
    channel.queue_bind(queue, "amq.direct", routing_key=f"{unique}-b")
    channel.basic_publish("amq.direct", f"{unique}-a", b"a")
    channel.basic_publish("amq.direct", f"{unique}-b", b"b")
    assert drain_queue(channel, queue) == [b"a", b"b"]
    channel.queue_unbind(queue, "amq.direct", routing_key=f"{unique}-a")
    channel.basic_publish("amq.direct", f"{unique}-a", b"a2")
    channel.basic_publish("amq.direct", f"{unique}-b", b"b2")
    assert drain_queue(channel, queue) == [b"b2"]


def test_unbind_of_missing_binding_queue_or_exchange_is_ok(channel: Any, unique: str) -> None:
    queue = channel.queue_declare(f"{unique}-q", exclusive=True).method.queue
    channel.queue_unbind(queue, "amq.direct", routing_key="never-bound")
    channel.queue_unbind(f"{unique}-no-queue", "amq.direct", routing_key="k")
    channel.queue_unbind(queue, f"{unique}-no-exchange", routing_key="k")
    assert channel.is_open


def test_bind_to_missing_queue_is_404(channel: Any, unique: str) -> None:
    name = f"{unique}-missing"
    assert channel_error(channel, "queue_bind", name, "amq.direct", routing_key="k") == (
        404,
        f"NOT_FOUND - no queue '{name}' in vhost '/'",
    )


def test_bind_to_missing_exchange_is_404(connection: pika.BlockingConnection, unique: str) -> None:
    ch = connection.channel()
    queue = ch.queue_declare(f"{unique}-q", exclusive=True).method.queue
    name = f"{unique}-missing"
    assert channel_error(ch, "queue_bind", queue, name, routing_key="k") == (
        404,
        f"NOT_FOUND - no exchange '{name}' in vhost '/'",
    )


def test_purge_returns_the_number_of_ready_messages(channel: Any, unique: str) -> None:
    channel.confirm_delivery()  # counts are exact only once the queue has the messages
    queue = channel.queue_declare(f"{unique}-q", exclusive=True).method.queue
    for i in range(5):
        channel.basic_publish("", queue, f"m{i}".encode())
    method, _props, _body = channel.basic_get(queue)  # one unacked: purge leaves it alone
    assert method is not None
    assert channel.queue_purge(queue).method.message_count == 4
    assert channel.queue_purge(queue).method.message_count == 0
    channel.basic_nack(method.delivery_tag, requeue=True)
    assert drain_queue(channel, queue) == [b"m0"]


def test_purge_of_missing_queue_is_404(channel: Any, unique: str) -> None:
    name = f"{unique}-missing"
    assert channel_error(channel, "queue_purge", name) == (404, f"NOT_FOUND - no queue '{name}' in vhost '/'")


def test_delete_returns_message_count(connection: pika.BlockingConnection, unique: str) -> None:
    ch = connection.channel()
    ch.confirm_delivery()
    queue = ch.queue_declare(f"{unique}-q", exclusive=True).method.queue
    for i in range(3):
        ch.basic_publish("", queue, f"m{i}".encode())
    assert ch.queue_delete(queue).method.message_count == 3
    assert not queue_exists(connection, queue)


def test_delete_of_missing_queue_is_ok_with_zero_count(channel: Any, unique: str) -> None:
    ok = channel.queue_delete(f"{unique}-never-declared")
    assert ok.method.message_count == 0
    channel.queue_delete(f"{unique}-never-declared", if_unused=True, if_empty=True)
    assert channel.is_open


@pytest.mark.parametrize(
    ("condition", "text"),
    [("if_unused", "in use"), ("if_empty", "not empty")],
    ids=["if-unused-refuses-a-queue-with-consumers", "if-empty-refuses-a-queue-with-messages"],
)
def test_conditional_delete_refuses_and_keeps_the_queue(
    connection: pika.BlockingConnection, unique: str, condition: str, text: str
) -> None:
    ch = connection.channel()
    ch.confirm_delivery()
    queue = ch.queue_declare(f"{unique}-q", exclusive=True).method.queue
    if condition == "if_unused":
        ch.basic_consume(queue, Collector())
    else:
        ch.basic_publish("", queue, b"x")
    assert channel_error(connection.channel(), "queue_delete", queue, **{condition: True}) == (
        406,
        f"PRECONDITION_FAILED - queue '{queue}' in vhost '/' {text}",
    )
    assert queue_exists(connection, queue)


def test_delete_if_unused_and_if_empty_deletes_an_idle_empty_queue(
    connection: pika.BlockingConnection, unique: str
) -> None:
    ch = connection.channel()
    queue = ch.queue_declare(f"{unique}-q", exclusive=True).method.queue
    assert ch.queue_delete(queue, if_unused=True, if_empty=True).method.message_count == 0
    assert not queue_exists(connection, queue)


def test_deleting_a_queue_removes_its_bindings(connection: pika.BlockingConnection, unique: str) -> None:
    ch = connection.channel()
    queue = ch.queue_declare(f"{unique}-q", exclusive=True).method.queue
    ch.queue_bind(queue, "amq.direct", routing_key=f"{unique}-rk")
    ch.queue_delete(queue)
    ch.queue_declare(queue, exclusive=True)
    ch.basic_publish("amq.direct", f"{unique}-rk", b"x")
    assert drain_queue(ch, queue) == []
