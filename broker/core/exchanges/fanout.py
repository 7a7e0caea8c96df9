"""The ``fanout`` exchange type: every message goes to every bound destination; the routing key is ignored."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from broker.core.model.message import Message


class FanoutExchangeType:
    """A precomputed tuple of destinations (rabbit_exchange_type_fanout routes to all bindings).

    A destination bound twice (different keys or arguments) is kept once in the tuple and counted, so it stays
    routed until its last binding goes.
    """

    type_name: ClassVar[str] = "fanout"
    unique_destinations: ClassVar[bool] = True

    __slots__ = ("_counts", "_destinations")

    def __init__(self) -> None:
        self._counts: dict[object, int] = {}
        self._destinations: tuple[object, ...] = ()

    @classmethod
    def validate(cls, arguments: Mapping[str, Any]) -> None:
        """RabbitMQ's fanout type accepts any declare arguments."""

    def bind(self, destination: object, routing_key: str, arguments: Mapping[str, Any]) -> None:
        self._counts[destination] = self._counts.get(destination, 0) + 1
        self._destinations = tuple(self._counts)

    def unbind(self, destination: object, routing_key: str, arguments: Mapping[str, Any]) -> None:
        count = self._counts.get(destination)
        if count is None:
            return
        if count > 1:
            self._counts[destination] = count - 1
            return
        del self._counts[destination]
        self._destinations = tuple(self._counts)

    def route(self, message: Message) -> tuple[object, ...]:
        return self._destinations
