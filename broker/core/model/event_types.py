"""The events observers receive: what happened to a message (`Fate`), to the topology (`Topology`), and the
`Observer` interface that receives them. The bus that carries them is `broker.core.events.events.EventBus`."""

from __future__ import annotations

from enum import Enum
from typing import Any, Protocol

from broker.core.model.message import Message


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
    CONSUMER_ADDED = "consumer_added"  # detail: queue and consumer_detail's fields
    CONSUMER_REMOVED = "consumer_removed"  # detail: queue and consumer_detail's fields


# No dataclasses here: their generated methods are compiled at import (start-up cost). These are
# built for every fate of every message while events are on, so the constructors stay positional and plain.


class MessageEvent:
    __slots__ = ("detail", "fate", "message", "message_id", "queue", "vhost")

    def __init__(
        self,
        fate: Fate,
        vhost: str,
        message: Message,
        message_id: int,
        queue: str | None = None,
        detail: dict[str, Any] | None = None,
    ) -> None:
        self.fate = fate
        self.vhost = vhost
        self.message = message
        self.message_id = message_id
        self.queue = queue
        self.detail: dict[str, Any] = {} if detail is None else detail

    def __repr__(self) -> str:
        return (
            f"MessageEvent(fate={self.fate!r}, vhost={self.vhost!r}, message_id={self.message_id!r}, "
            f"queue={self.queue!r}, detail={self.detail!r})"
        )


class TopologyEvent:
    __slots__ = ("actor", "detail", "kind", "vhost")

    def __init__(
        self, kind: Topology, vhost: str, detail: dict[str, Any] | None = None, actor: str = ""
    ) -> None:
        self.kind = kind
        self.vhost = vhost
        self.detail: dict[str, Any] = {} if detail is None else detail
        # Who did it (broker.core.model.acting, read when the event was emitted); "" = the broker itself.
        self.actor = actor

    def __repr__(self) -> str:
        return (
            f"TopologyEvent(kind={self.kind!r}, vhost={self.vhost!r}, detail={self.detail!r}, "
            f"actor={self.actor!r})"
        )


class Notice:
    """A lifecycle event as RabbitMQ's rabbit_event:notify sends it: ``name`` is the event exchange's routing
    key (user.created, connection.closed, policy.set), ``fields`` its properties in RabbitMQ's names,
    ``actor`` who did it (None: the event names nobody, as connection.closed does)."""

    __slots__ = ("actor", "fields", "name")

    def __init__(self, name: str, fields: dict[str, Any], actor: str | None) -> None:
        self.name = name
        self.fields = fields
        self.actor = actor

    def __repr__(self) -> str:
        return f"Notice(name={self.name!r}, fields={self.fields!r}, actor={self.actor!r})"


class Observer(Protocol):
    def on_message(self, event: MessageEvent) -> None:
        """Called synchronously at each fate of each message, in the order the broker acts."""
        ...

    def on_topology(self, event: TopologyEvent) -> None:
        """Called after a declare, delete, bind or unbind took effect."""
        ...


def consumer_detail(consumer: Any) -> dict[str, Any]:
    """A consumer's fields for its topology events (the event exchange reports them as RabbitMQ does)."""
    return {
        "consumer_tag": consumer.consumer_tag,
        "ack_required": not consumer.no_ack,
        "exclusive": consumer.exclusive,
        "prefetch_count": consumer.prefetch_count,
        "arguments": consumer.arguments,
        "channel": getattr(consumer.channel, "channel_id", 0),
        "channel_pid": getattr(consumer.channel, "pid", ""),
    }
