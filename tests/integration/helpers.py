"""Deadline-bounded waiting and pika pumping for the client-level suites (the raw client: raw_amqp.py).

Nothing here sleeps to wait for an event: every wait polls a predicate until a deadline and fails with a clear
message when the deadline passes.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pika
import pytest

DEFAULT_TIMEOUT_S = 5.0

# The exact text RabbitMQ sends in every RESOURCE_LOCKED about an exclusive queue.
LOCKED_SUFFIX = (
    "It could be originally declared on another connection or the exclusive property value does not match "
    "that of the original declaration."
)


def channel_error(ch: Any, call: str, *args: Any, **kwargs: Any) -> tuple[int, str]:
    """Run ``ch.<call>(...)`` expecting the broker to close the channel; returns (reply_code, reply_text)."""
    with pytest.raises(pika.exceptions.ChannelClosedByBroker) as excinfo:
        getattr(ch, call)(*args, **kwargs)
    return excinfo.value.reply_code, excinfo.value.reply_text


def locked_text(queue: str, vhost: str = "/") -> str:
    """RabbitMQ's 405 text for touching an exclusive queue owned by another connection."""
    return (
        f"RESOURCE_LOCKED - cannot obtain exclusive access to locked queue '{queue}' in vhost '{vhost}'. "
        + LOCKED_SUFFIX
    )


def wait_until(
    predicate: Callable[[], bool],
    timeout_s: float = DEFAULT_TIMEOUT_S,
    what: str = "condition",
    poll_s: float = 0.01,
) -> None:
    """Poll ``predicate`` until it is true; fail the test when ``timeout_s`` passes first."""
    deadline = time.monotonic() + timeout_s
    while True:
        if predicate():
            return
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout_s}s waiting for {what}")
        time.sleep(poll_s)


def pump(
    connection: pika.BlockingConnection,
    predicate: Callable[[], bool],
    timeout_s: float = DEFAULT_TIMEOUT_S,
    what: str = "condition",
) -> None:
    """Run pika's I/O loop in short slices until ``predicate`` is true, or fail at the deadline."""
    deadline = time.monotonic() + timeout_s
    while not predicate():
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise AssertionError(f"timed out after {timeout_s}s waiting for {what}")
        connection.process_data_events(time_limit=min(0.05, remaining))


def pump_for(connection: pika.BlockingConnection, duration_s: float) -> None:
    """Let pika process what the broker sends during ``duration_s`` (to check that nothing more arrives)."""
    deadline = time.monotonic() + duration_s
    while (remaining := deadline - time.monotonic()) > 0:
        connection.process_data_events(time_limit=min(0.05, remaining))


@dataclass
class Delivery:
    """One message as a pika consumer callback saw it."""

    consumer_tag: str
    delivery_tag: int
    redelivered: bool
    exchange: str
    routing_key: str
    properties: pika.BasicProperties
    body: bytes


class Collector:
    """A pika ``on_message_callback`` that records deliveries (optionally acking them)."""

    def __init__(self, auto_ack_in_callback: bool = False) -> None:
        self.deliveries: list[Delivery] = []
        self._ack = auto_ack_in_callback

    def __call__(
        self,
        channel: Any,
        method: Any,
        properties: pika.BasicProperties,
        body: bytes,
    ) -> None:
        self.deliveries.append(
            Delivery(
                consumer_tag=method.consumer_tag,
                delivery_tag=method.delivery_tag,
                redelivered=method.redelivered,
                exchange=method.exchange,
                routing_key=method.routing_key,
                properties=properties,
                body=body,
            )
        )
        if self._ack:
            channel.basic_ack(method.delivery_tag)

    @property
    def bodies(self) -> list[bytes]:
        return [d.body for d in self.deliveries]

    def __len__(self) -> int:
        return len(self.deliveries)


def new_queue(ch: Any) -> str:
    """An exclusive server-named queue."""
    name: str = ch.queue_declare("", exclusive=True).method.queue
    return name


def ready(ch: Any, queue: str) -> int:
    """The queue's ready-message count (a passive queue.declare)."""
    count: int = ch.queue_declare(queue, passive=True).method.message_count
    return count


def fill(ch: Any, queue: str, count: int, prefix: str = "m") -> None:
    """Publish ``{prefix}0`` .. ``{prefix}{count-1}`` to ``queue`` through the default exchange."""
    for i in range(count):
        ch.basic_publish("", queue, f"{prefix}{i}".encode())


def prepared(connection: pika.BlockingConnection, count: int) -> tuple[Any, str]:
    """A confirm-mode channel and an exclusive queue holding m0..m{count-1}."""
    ch = connection.channel()
    ch.confirm_delivery()
    queue = new_queue(ch)
    fill(ch, queue, count)
    return ch, queue


def _passive_declare_finds(connection: pika.BlockingConnection, declare: str, name: str, *found: int) -> bool:
    """A passive ``declare`` of ``name`` on a fresh channel: True when ok or closed with a code in ``found``,
    False on 404; any other error is raised."""
    ch = connection.channel()
    try:
        getattr(ch, declare)(name, passive=True)
    except pika.exceptions.ChannelClosedByBroker as exc:
        if exc.reply_code in found:
            return True
        if exc.reply_code == 404:
            return False
        raise
    ch.close()
    return True


def queue_exists(connection: pika.BlockingConnection, name: str) -> bool:
    """Whether queue ``name`` exists; 405 is another connection's exclusive queue, which exists."""
    return _passive_declare_finds(connection, "queue_declare", name, 405)


def exchange_exists(connection: pika.BlockingConnection, name: str) -> bool:
    """Whether exchange ``name`` exists."""
    return _passive_declare_finds(connection, "exchange_declare", name)


def drain_redelivered(ch: Any, queue: str) -> list[tuple[bytes, bool]]:
    """(body, redelivered) of every ready message, auto-acked, in queue order."""
    out: list[tuple[bytes, bool]] = []
    while True:
        method, _props, body = ch.basic_get(queue, auto_ack=True)
        if method is None:
            return out
        out.append((body, bool(method.redelivered)))


def drain_queue(channel: Any, queue: str, limit: int = 10_000) -> list[bytes]:
    """basic.get with auto-ack until get-empty; returns the bodies in order."""
    bodies: list[bytes] = []
    for _ in range(limit):
        method, _props, body = channel.basic_get(queue, auto_ack=True)
        if method is None:
            return bodies
        bodies.append(body)
    raise AssertionError(f"queue {queue} did not run empty after {limit} gets")


# ----------------------------------------------------------------------------------------------------------
# Raw AMQP over a socket, for what no client library lets us send (immediate=true, unopened channels,
# reused consumer tags, broken frame sequences) and for checking the exact frame order the broker sends.
