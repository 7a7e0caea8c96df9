"""Test doubles for the channel side of the core: a recording ConsumerChannel and a manual call_soon."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from broker.core.queues.queue import Consumer, Envelope, Queue


class ManualLoop:
    """Collects call_soon callbacks; tests run them explicitly, as one event-loop turn."""

    def __init__(self) -> None:
        self.callbacks: list[Callable[[], None]] = []

    def call_soon(self, callback: Callable[[], None]) -> Any:
        self.callbacks.append(callback)
        return None

    def turn(self) -> None:
        """Run the callbacks scheduled so far (not the ones they schedule)."""
        callbacks, self.callbacks = self.callbacks, []
        for callback in callbacks:
            callback()

    def run(self) -> None:
        while self.callbacks:
            self.turn()

    def drain(self) -> None:
        """Run turns until nothing is scheduled; a loop that never goes idle is a failure, not a hang."""
        for _ in range(1000):
            if not self.callbacks:
                return
            self.turn()
        raise AssertionError("the loop never went idle")


class RecordingChannel:
    """A ConsumerChannel that records deliveries and applies a per-consumer prefetch like the session does."""

    def __init__(self, writable: bool = True) -> None:
        self.delivered: list[tuple[str, str, bool]] = []
        self.envelopes: list[tuple[Consumer, Queue, Envelope]] = []
        self.cancelled: list[str] = []
        self.writable = writable

    def can_deliver(self, consumer: Consumer) -> bool:
        if not self.writable:
            return False
        return consumer.no_ack or not consumer.prefetch_count or consumer.unacked < consumer.prefetch_count

    def deliver(self, consumer: Consumer, queue: Queue, envelope: Envelope) -> None:
        if not consumer.no_ack:
            consumer.unacked += 1
        self.delivered.append((consumer.consumer_tag, envelope.message.body.decode(), envelope.redelivered))
        self.envelopes.append((consumer, queue, envelope))

    def consumer_cancelled(self, consumer: Consumer) -> None:
        self.cancelled.append(consumer.consumer_tag)
