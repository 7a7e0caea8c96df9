"""Topology and drop events a vhost emits for attached observers (checked by ``events.observers`` first)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from broker.core.events.events import EventBus, Fate, Topology
from broker.core.exchanges.exchange import Exchange

if TYPE_CHECKING:
    from broker.core.exchanges.bindings import Binding
    from broker.core.queues.queue import Envelope, Queue


def bound(
    events: EventBus,
    vhost: str,
    source: Exchange,
    destination: Queue | Exchange,
    routing_key: str,
    arguments: Any,
) -> None:
    if events.observers:
        events.topology(
            Topology.BOUND,
            vhost,
            source=source.name,
            destination=destination.name,
            destination_type="exchange" if isinstance(destination, Exchange) else "queue",
            routing_key=routing_key,
            arguments=dict(arguments),
        )


def unbound(events: EventBus, vhost: str, removed: list[Binding]) -> None:
    if events.observers:
        for binding in removed:
            events.topology(
                Topology.UNBOUND,
                vhost,
                source=binding.source.name,
                destination=getattr(binding.destination, "name", ""),
                destination_type="exchange" if binding.is_e2e else "queue",
                routing_key=binding.routing_key,
                arguments=binding.args,
            )


def dropped(events: EventBus, vhost: str, queue: Queue, envelopes: list[Envelope], reason: str) -> None:
    for envelope in envelopes:
        events.message(Fate.DROPPED, vhost, envelope.message, queue.name, reason=reason)
