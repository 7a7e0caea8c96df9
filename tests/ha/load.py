"""Confirmed persistent load through a client that lists both nodes (pika's list of parameters), and a
consumer that acks what it gets except a few it holds unacked, for the failover suite. Each runs on its own
thread with its own connection, reconnecting through the host list whenever its node goes away."""

from __future__ import annotations

import bisect
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import pika
import pika.exceptions

QUEUE = "load"
PERSISTENT = pika.BasicProperties(delivery_mode=2)
# What a lost node looks like to a pika client (connection refused, reset, closed with 320, channel gone).
LOST = (pika.exceptions.AMQPError, OSError)


def connect(nodes: Sequence[pika.ConnectionParameters]) -> pika.BlockingConnection:
    """pika tries the parameters in order: a standby refuses the connection, the active node accepts it."""
    return pika.BlockingConnection(list(nodes))


@dataclass
class Publisher:
    nodes: Callable[[], Sequence[pika.ConnectionParameters]]
    stop: threading.Event = field(default_factory=threading.Event)
    # (id, monotonic time it was sent, monotonic time of its confirm), in confirm order.
    confirmed: list[tuple[int, float, float]] = field(default_factory=list)
    next_id: int = 0
    reconnects: int = 0

    def run(self) -> None:
        while not self.stop.is_set():
            try:
                connection = connect(self.nodes())
            except LOST:
                time.sleep(0.02)
                continue
            self.reconnects += 1
            try:
                channel = connection.channel()
                channel.confirm_delivery()
                channel.queue_declare(QUEUE, durable=True)
                while not self.stop.is_set():
                    message_id = self.next_id
                    self.next_id += 1
                    sent_at = time.monotonic()
                    channel.basic_publish("", QUEUE, str(message_id).encode(), PERSISTENT)
                    self.confirmed.append((message_id, sent_at, time.monotonic()))
                connection.close()
            except LOST:
                continue  # the node died under us: whatever was not confirmed may or may not be kept

    def first_confirm_sent_after(self, moment: float) -> float | None:
        """When the first message sent after ``moment`` was confirmed (None: none yet). A message sent
        after its node died can only be confirmed by the next one."""
        sent = [sent_at for _, sent_at, _ in self.confirmed]
        index = bisect.bisect_right(sent, moment)
        return self.confirmed[index][2] if index < len(self.confirmed) else None


@dataclass
class Consumer:
    nodes: Callable[[], Sequence[pika.ConnectionParameters]]
    hold_every: int = 200
    stop: threading.Event = field(default_factory=threading.Event)
    # (id, redelivered, connection number) for every delivery, in order.
    deliveries: list[tuple[int, bool, int]] = field(default_factory=list)
    held: dict[int, int] = field(default_factory=dict)  # id -> the connection it was left unacked on
    connections: int = 0

    def run(self) -> None:
        while not self.stop.is_set():
            try:
                connection = connect(self.nodes())
            except LOST:
                time.sleep(0.02)
                continue
            self.connections += 1
            number = self.connections
            try:
                channel = connection.channel()
                channel.basic_qos(prefetch_count=1000)
                channel.queue_declare(QUEUE, durable=True)
                for method, _, body in channel.consume(QUEUE, inactivity_timeout=0.1):
                    if self.stop.is_set():
                        break
                    if method is None:
                        continue
                    message_id = int(body)
                    self.deliveries.append((message_id, bool(method.redelivered), number))
                    if message_id % self.hold_every == 0 and message_id not in self.held:
                        self.held[message_id] = number  # left unacked until this node is gone
                    else:
                        channel.basic_ack(method.delivery_tag)
                connection.close()
            except LOST:
                continue

    def seen(self) -> set[int]:
        return {message_id for message_id, _, _ in self.deliveries}
