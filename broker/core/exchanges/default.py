"""The default exchange (``""``): routes to the queue named by the routing key, and cannot be bound."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, ClassVar

from broker.core.model.message import Message
from protocol.errors import ChannelError, ReplyCode

DEFAULT_EXCHANGE_DENIED = "operation not permitted on the default exchange"


class DefaultExchangeType:
    """Every queue is implicitly bound to the default exchange under its own name (rabbit_exchange:route/3
    special-cases the exchange named ``<<>>``: no binding table, just the queue named by the key).

    The vhost refuses bind/unbind/declare/delete on ``""`` with 403 before reaching here; ``bind`` and
    ``unbind`` raise the same error in case anything calls them anyway.
    """

    type_name: ClassVar[str] = "direct"
    unique_destinations: ClassVar[bool] = True

    __slots__ = ("_lookup_queue",)

    def __init__(self, lookup_queue: Callable[[str], object | None]) -> None:
        self._lookup_queue = lookup_queue

    @classmethod
    def validate(cls, arguments: Mapping[str, Any]) -> None:
        """Never declared by clients."""

    def bind(self, destination: object, routing_key: str, arguments: Mapping[str, Any]) -> None:
        raise ChannelError(ReplyCode.ACCESS_REFUSED, DEFAULT_EXCHANGE_DENIED)

    def unbind(self, destination: object, routing_key: str, arguments: Mapping[str, Any]) -> None:
        raise ChannelError(ReplyCode.ACCESS_REFUSED, DEFAULT_EXCHANGE_DENIED)

    def route(self, message: Message) -> tuple[object, ...]:
        queue = self._lookup_queue(message.routing_key)
        return () if queue is None else (queue,)
