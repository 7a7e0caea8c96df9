"""Message-fate and topology events for observers (test inspection, the journal); free when nobody listens.

Emit sites test ``bus.observers`` before building anything, so with no observer attached the hot path pays one
attribute check per site (design §4.7). Observers run synchronously on the loop
thread and must only append to their own buffers: they never block and never call back into the core.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Protocol

from broker.core.message import Message


class Fate(Enum):
    """What happened to a message at one step. ``queue`` is set for the queue-level fates."""

    PUBLISHED = "published"  # accepted on a channel (exchange, routing_key)
    ROUTED = "routed"  # routing done; detail["queues"] lists the queues reached (empty = unroutable)
    RETURNED = "returned"  # basic.return sent to the publisher (mandatory, unroutable)
    DELIVERED = "delivered"  # handed to a consumer (detail consumer_tag) or basic.get; detail["redelivered"]
    ACKED = "acked"
    NACKED = "nacked"  # nack or reject; detail["requeue"]
    REQUEUED = "requeued"  # back in its queue at its old position
    DEAD_LETTERED = "dead_lettered"  # detail["reason"]: rejected / expired / maxlen / delivery_limit
    EXPIRED = "expired"
    DROPPED = "dropped"  # discarded: detail["reason"] = rejected / purged / queue_deleted / maxlen …


class Topology(Enum):
    EXCHANGE_DECLARED = "exchange_declared"
    EXCHANGE_DELETED = "exchange_deleted"
    QUEUE_DECLARED = "queue_declared"
    QUEUE_DELETED = "queue_deleted"
    BOUND = "bound"
    UNBOUND = "unbound"
    CONSUMER_ADDED = "consumer_added"  # detail: queue, consumer_tag
    CONSUMER_REMOVED = "consumer_removed"  # detail: queue, consumer_tag


@dataclass(slots=True)
class MessageEvent:
    fate: Fate
    vhost: str
    message: Message
    message_id: int
    queue: str | None = None
    detail: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class TopologyEvent:
    kind: Topology
    vhost: str
    detail: dict[str, Any] = field(default_factory=dict)


class Observer(Protocol):
    def on_message(self, event: MessageEvent) -> None:
        """Called synchronously at each fate of each message, in the order the broker acts."""
        ...

    def on_topology(self, event: TopologyEvent) -> None:
        """Called after a declare, delete, bind or unbind took effect."""
        ...


class EventBus:
    """Fans events out to observers. Always present; emit sites skip all work while ``observers`` is empty."""

    __slots__ = ("_next_id", "observers")

    def __init__(self) -> None:
        self.observers: list[Observer] = []
        self._next_id = 1

    def message_id(self, message: Message) -> int:
        """A broker-wide id, given the first time an observer sees the message (0 = never observed)."""
        if not message.message_id:
            message.message_id = self._next_id
            self._next_id += 1
        return message.message_id

    def message(
        self, fate: Fate, vhost: str, message: Message, queue: str | None = None, **detail: Any
    ) -> None:
        event = MessageEvent(fate, vhost, message, self.message_id(message), queue, detail)
        for observer in self.observers:
            observer.on_message(event)

    def topology(self, kind: Topology, vhost: str, **detail: Any) -> None:
        event = TopologyEvent(kind, vhost, detail)
        for observer in self.observers:
            observer.on_topology(event)

    def attach(self, observer: Observer) -> Callable[[], None]:
        """Start sending events to ``observer``; returns the function that stops it."""
        self.observers.append(observer)

        def detach() -> None:
            if observer in self.observers:
                self.observers.remove(observer)

        return detach
