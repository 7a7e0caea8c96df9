"""The ``direct`` exchange type: a message goes to the destinations bound with exactly its routing key."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from broker.core.model.message import Message


class DirectExchangeType:
    """Routing key → destinations, a dict lookup on the hot path (rabbit_exchange_type_direct).

    Several bindings may join the same key and destination (different arguments make different bindings in
    RabbitMQ); the destination stays routed until the last of them goes, hence the reference counts.
    """

    type_name: ClassVar[str] = "direct"
    unique_destinations: ClassVar[bool] = True

    __slots__ = ("_counts", "_routes")

    def __init__(self) -> None:
        self._counts: dict[str, dict[object, int]] = {}
        self._routes: dict[str, tuple[object, ...]] = {}

    @classmethod
    def validate(cls, arguments: Mapping[str, Any]) -> None:
        """RabbitMQ's direct type accepts any declare arguments."""

    def bind(self, destination: object, routing_key: str, arguments: Mapping[str, Any]) -> None:
        counts = self._counts.setdefault(routing_key, {})
        counts[destination] = counts.get(destination, 0) + 1
        self._routes[routing_key] = tuple(counts)

    def unbind(self, destination: object, routing_key: str, arguments: Mapping[str, Any]) -> None:
        counts = self._counts.get(routing_key)
        if counts is None or destination not in counts:
            return
        if counts[destination] > 1:
            counts[destination] -= 1
            return
        del counts[destination]
        if counts:
            self._routes[routing_key] = tuple(counts)
        else:
            del self._counts[routing_key]
            del self._routes[routing_key]

    def route(self, message: Message) -> tuple[object, ...]:
        return self._routes.get(message.routing_key, ())
