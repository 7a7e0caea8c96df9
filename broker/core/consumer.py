"""A consumer on a queue and the interface the session's channel implements to receive deliveries."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from broker.core.queue import Envelope, Queue


class ConsumerChannel(Protocol):
    """What a queue needs from the channel that owns a consumer. Implemented by the session layer."""

    def can_deliver(self, consumer: Consumer) -> bool:
        """Called before each delivery: prefetch limits and socket backpressure say yes or no."""
        ...

    def deliver(self, consumer: Consumer, queue: Queue, envelope: Envelope) -> None:
        """Called when the queue hands a message to the consumer; the channel assigns the delivery tag."""
        ...

    def consumer_cancelled(self, consumer: Consumer) -> None:
        """Called when the broker cancels the consumer (its queue was deleted)."""
        ...


class Consumer:
    """One basic.consume. ``unacked`` counts deliveries awaiting ack, for its per-consumer prefetch."""

    __slots__ = (
        "arguments",
        "channel",
        "consumer_tag",
        "exclusive",
        "no_ack",
        "prefetch_count",
        "queue",
        "unacked",
    )

    def __init__(
        self,
        consumer_tag: str,
        queue: Queue,
        channel: ConsumerChannel,
        no_ack: bool,
        exclusive: bool,
        prefetch_count: int,
        arguments: Mapping[str, Any] | None = None,
    ) -> None:
        self.consumer_tag = consumer_tag
        self.queue = queue
        self.channel = channel
        self.no_ack = no_ack
        self.exclusive = exclusive
        self.prefetch_count = prefetch_count
        self.arguments = dict(arguments or {})
        self.unacked = 0

    def __repr__(self) -> str:
        return f"Consumer({self.consumer_tag!r} on {self.queue.name!r})"
