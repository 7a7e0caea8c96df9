"""Deadline-bounded waiting, pika pumping and a tiny raw AMQP client (pamqp) for the client-level suites.

Nothing here sleeps to wait for an event: every wait polls a predicate until a deadline and fails with a clear
message when the deadline passes.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pika
import pytest
from pamqp import commands, frame, header
from pamqp import exceptions as pamqp_exceptions
from pamqp.base import Frame
from pamqp.body import ContentBody
from pamqp.common import FieldTable
from pamqp.heartbeat import Heartbeat

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
# ----------------------------------------------------------------------------------------------------------


class SocketClosed(Exception):
    """The broker closed (FIN or RST) the TCP connection."""


class RawAMQP:
    """A minimal blocking AMQP 0-9-1 client made of pamqp frames; one socket, no background thread."""

    def __init__(self, host: str, port: int, timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
        self.sock = socket.create_connection((host, port), timeout=timeout_s)
        self.timeout_s = timeout_s
        self._buffer = b""
        self.start: commands.Connection.Start | None = None
        self.tune: commands.Connection.Tune | None = None

    # -- transport -------------------------------------------------------------------------------------------
    def send(self, value: Frame | ContentBody | Heartbeat | header.ContentHeader, channel: int = 0) -> None:
        self.sock.sendall(frame.marshal(value, channel))

    def send_bytes(self, data: bytes) -> None:
        self.sock.sendall(data)

    def recv(self, timeout_s: float | None = None) -> tuple[int, Any]:
        """The next frame as (channel, pamqp value); raises SocketClosed or TimeoutError."""
        deadline = time.monotonic() + (self.timeout_s if timeout_s is None else timeout_s)
        while True:
            if self._buffer:
                try:
                    consumed, channel, value = frame.unmarshal(self._buffer)
                except pamqp_exceptions.UnmarshalingException:
                    pass
                else:
                    self._buffer = self._buffer[consumed:]
                    return channel, value
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError("no frame from the broker before the deadline")
            self.sock.settimeout(remaining)
            try:
                data = self.sock.recv(65536)
            except (ConnectionResetError, BrokenPipeError) as exc:
                raise SocketClosed(str(exc)) from exc
            except TimeoutError:
                continue
            if not data:
                raise SocketClosed("EOF")
            self._buffer += data

    def recv_method(self, timeout_s: float | None = None) -> tuple[int, Any]:
        """Like recv, skipping heartbeats."""
        while True:
            channel, value = self.recv(timeout_s)
            if not isinstance(value, Heartbeat):
                return channel, value

    def expect(self, kind: type[Any], channel: int | None = None) -> Any:
        got_channel, value = self.recv_method()
        assert isinstance(value, kind), (
            f"expected {kind.__name__}, got {type(value).__name__}: {describe(value)}"
        )
        if channel is not None:
            assert got_channel == channel, f"{kind.__name__} arrived on channel {got_channel}, not {channel}"
        return value

    def expect_closed(self, timeout_s: float | None = None) -> None:
        """The broker closes the socket (frames still in flight are read and discarded)."""
        deadline = time.monotonic() + (self.timeout_s if timeout_s is None else timeout_s)
        while True:
            try:
                self.recv(max(0.0, deadline - time.monotonic()))
            except SocketClosed:
                return
            except TimeoutError:
                raise AssertionError("the broker did not close the socket") from None

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass

    # -- handshake -------------------------------------------------------------------------------------------
    def send_header(self) -> commands.Connection.Start:
        """Send the 0-9-1 protocol header and read connection.start."""
        self.send_bytes(header.ProtocolHeader().marshal())
        self.start = self.expect(commands.Connection.Start, channel=0)
        return self.start

    def start_ok(
        self,
        username: str = "guest",
        password: str = "guest",
        *,
        failure_close: bool = True,
    ) -> None:
        """Answer connection.start with PLAIN credentials (with or without authentication_failure_close)."""
        capabilities: FieldTable = {
            "authentication_failure_close": failure_close,
            "consumer_cancel_notify": True,
        }
        self.send(
            commands.Connection.StartOk(
                client_properties={"product": "warrenmq-tests", "capabilities": capabilities},
                mechanism="PLAIN",
                response=f"\0{username}\0{password}",
                locale="en_US",
            )
        )

    def tune_ok(
        self, channel_max: int | None = None, frame_max: int | None = None, heartbeat: int = 0
    ) -> None:
        """Read connection.tune and answer it (the server's values unless overridden)."""
        self.tune = self.expect(commands.Connection.Tune, channel=0)
        self.send(
            commands.Connection.TuneOk(
                channel_max=self.tune.channel_max if channel_max is None else channel_max,
                frame_max=self.tune.frame_max if frame_max is None else frame_max,
                heartbeat=heartbeat,
            )
        )

    def handshake(
        self,
        username: str = "guest",
        password: str = "guest",
        vhost: str = "/",
        heartbeat: int = 0,
        channel_max: int | None = None,
    ) -> commands.Connection.OpenOk:
        self.send_header()
        self.start_ok(username, password)
        self.tune_ok(channel_max=channel_max, heartbeat=heartbeat)
        self.send(commands.Connection.Open(virtual_host=vhost))
        ok: commands.Connection.OpenOk = self.expect(commands.Connection.OpenOk, channel=0)
        return ok

    def open_channel(self, channel: int = 1) -> None:
        self.send(commands.Channel.Open(), channel)
        self.expect(commands.Channel.OpenOk, channel=channel)

    def opened(self, channel: int = 1) -> RawAMQP:
        """Handshake as guest on vhost / and open ``channel``: ready for methods on it."""
        self.handshake()
        self.open_channel(channel)
        return self

    def publish(
        self,
        channel: int,
        exchange: str,
        routing_key: str,
        body: bytes,
        *,
        mandatory: bool = False,
        immediate: bool = False,
        properties: commands.Basic.Properties | None = None,
    ) -> None:
        self.send(
            commands.Basic.Publish(
                exchange=exchange, routing_key=routing_key, mandatory=mandatory, immediate=immediate
            ),
            channel,
        )
        self.send(header.ContentHeader(0, len(body), properties or commands.Basic.Properties()), channel)
        if body:
            self.send(ContentBody(body), channel)

    def expect_connection_close(self) -> commands.Connection.Close:
        close: commands.Connection.Close = self.expect(commands.Connection.Close, channel=0)
        try:
            self.send(commands.Connection.CloseOk())
        except OSError:
            pass
        return close

    def __enter__(self) -> RawAMQP:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def describe(value: Any) -> str:
    try:
        return repr(dict(value))
    except (TypeError, ValueError):
        return repr(value)
