"""Read-only snapshots of a vhost's queues, consumers, exchanges and bindings (for test inspection and the
management API), as plain frozen values that can leave the loop thread.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from broker.core.exchanges.exchange import Exchange
from broker.core.queues.queue import Queue
from broker.core.topology.vhost import VirtualHost


@dataclass(frozen=True, slots=True)
class QueueInfo:
    """The fields RabbitMQ's `GET /api/queues/{vhost}/{name}` reports for a queue's depth and shape."""

    name: str
    vhost: str
    messages_ready: int
    messages_unacknowledged: int
    consumers: int
    durable: bool
    auto_delete: bool
    exclusive: bool
    arguments: dict[str, Any] = field(default_factory=dict)

    @property
    def messages(self) -> int:
        return self.messages_ready + self.messages_unacknowledged


@dataclass(frozen=True, slots=True)
class ConsumerInfo:
    queue: str
    consumer_tag: str
    no_ack: bool
    exclusive: bool
    prefetch_count: int
    arguments: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ExchangeInfo:
    name: str
    vhost: str
    type: str
    durable: bool
    auto_delete: bool
    internal: bool
    arguments: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class BindingInfo:
    """One binding as RabbitMQ lists it (`source` "" is the default exchange's implicit binding)."""

    source: str
    vhost: str
    destination: str
    destination_type: str  # "queue" or "exchange"
    routing_key: str
    arguments: dict[str, Any] = field(default_factory=dict)


def queue_info(queue: Queue) -> QueueInfo:
    return QueueInfo(
        name=queue.name,
        vhost=queue.vhost,
        messages_ready=len(queue.ready) + len(queue.fresh),
        messages_unacknowledged=queue.unacked,
        consumers=len(queue.consumers),
        durable=queue.durable,
        auto_delete=queue.auto_delete,
        exclusive=queue.exclusive,
        arguments=dict(queue.arguments),
    )


def queue_infos(vhost: VirtualHost) -> list[QueueInfo]:
    return [queue_info(queue) for queue in sorted(vhost.queues.values(), key=lambda q: q.name)]


def consumer_infos(queue: Queue) -> list[ConsumerInfo]:
    return [
        ConsumerInfo(
            queue=queue.name,
            consumer_tag=consumer.consumer_tag,
            no_ack=consumer.no_ack,
            exclusive=consumer.exclusive,
            prefetch_count=consumer.prefetch_count,
            arguments=dict(consumer.arguments),
        )
        for consumer in queue.consumers
    ]


def exchange_info(exchange: Exchange, vhost: str) -> ExchangeInfo:
    return ExchangeInfo(
        name=exchange.name,
        vhost=vhost,
        type=exchange.type_name,
        durable=exchange.durable,
        auto_delete=exchange.auto_delete,
        internal=exchange.internal,
        arguments=dict(exchange.arguments),
    )


def exchange_infos(vhost: VirtualHost) -> list[ExchangeInfo]:
    return [exchange_info(exchange, vhost.name) for _, exchange in sorted(vhost.exchanges.items())]


def binding_infos(vhost: VirtualHost, include_default: bool = True) -> list[BindingInfo]:
    """Every binding; like RabbitMQ, each queue also shows its implicit default-exchange binding first."""
    infos: list[BindingInfo] = []
    if include_default:
        for name in sorted(vhost.queues):
            infos.append(BindingInfo("", vhost.name, name, "queue", name))
    for binding in vhost.bindings:
        infos.append(
            BindingInfo(
                source=binding.source.name,
                vhost=vhost.name,
                destination=getattr(binding.destination, "name", ""),
                destination_type="exchange" if binding.is_e2e else "queue",
                routing_key=binding.routing_key,
                arguments=binding.args,
            )
        )
    return infos
