"""The ``x-delayed-message`` exchange type (rabbitmq-delayed-message-exchange plugin).

Declared with ``x-delayed-type`` naming the routing it wraps (direct, topic, …). A message with a positive
integer ``x-delay`` header (milliseconds) is held on the broker's clock and routed through the wrapped type
when due; one without routes at once. As in the plugin, a held message routes nowhere at publish time, so a
mandatory publish is returned and an alternate exchange gets it (plugin README: mandatory is not supported).
Held messages live in memory only.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from broker.core.message import Message
from protocol.errors import ChannelError, ReplyCode

if TYPE_CHECKING:
    from broker.core.clock import Clock, TimerHandle
    from broker.core.exchanges.base import ExchangeType

DELAYED_TYPE = "x-delayed-type"


class DelayHost(Protocol):
    clock: Clock

    def publish_held(self, exchange_name: str, message: Message) -> None:
        """Called when a held message is due: route it through the exchange now."""
        ...


class DelayedMessageExchangeType:
    type_name: ClassVar[str] = "x-delayed-message"
    unique_destinations: ClassVar[bool] = False
    # The types ``x-delayed-type`` may name: handed in by the registry, which lists this type among them.
    inner_types: ClassVar[Mapping[str, type[ExchangeType]]] = {}

    __slots__ = ("_due", "_held", "_host", "_name", "inner")

    def __init__(self) -> None:
        self.inner: ExchangeType | None = None
        self._host: DelayHost | None = None
        self._name = ""
        self._held: dict[int, tuple[Message, TimerHandle]] = {}
        self._due: Message | None = None

    @classmethod
    def validate(cls, arguments: Mapping[str, Any]) -> None:
        inner = arguments.get(DELAYED_TYPE)
        if inner == cls.type_name:
            raise ChannelError(
                ReplyCode.PRECONDITION_FAILED,
                "Invalid argument, 'x-delayed-type' can't be of type 'x-delayed-message'",
            )
        if not isinstance(inner, str) or inner not in cls.inner_types:
            raise ChannelError(
                ReplyCode.PRECONDITION_FAILED,
                "Invalid argument, 'x-delayed-type' must be an existing exchange type",
            )
        cls.inner_types[inner].validate(arguments)

    def configure(self, arguments: Mapping[str, Any]) -> None:
        self.inner = self.inner_types[str(arguments[DELAYED_TYPE])]()

    def attach(self, host: DelayHost, exchange_name: str) -> None:
        """Called by the vhost once the exchange exists: the clock and the way back in for due messages."""
        self._host = host
        self._name = exchange_name

    @property
    def held(self) -> int:
        return len(self._held)

    def bind(self, destination: object, routing_key: str, arguments: Mapping[str, Any]) -> None:
        assert self.inner is not None
        self.inner.bind(destination, routing_key, arguments)

    def unbind(self, destination: object, routing_key: str, arguments: Mapping[str, Any]) -> None:
        assert self.inner is not None
        self.inner.unbind(destination, routing_key, arguments)

    def route(self, message: Message) -> Iterable[object]:
        assert self.inner is not None
        if message is self._due or self._host is None:
            return self.inner.route(message)
        delay = (message.headers or {}).get("x-delay")
        if isinstance(delay, bool) or not isinstance(delay, int) or delay <= 0:
            return self.inner.route(message)
        key = id(message)
        timer = self._host.clock.call_later(delay / 1000, self._release_callback(key))
        self._held[key] = (message, timer)
        return ()

    def _release_callback(self, key: int) -> Callable[[], None]:
        def release() -> None:
            held = self._held.pop(key, None)
            if held is None or self._host is None:
                return
            self._due = held[0]
            try:
                self._host.publish_held(self._name, held[0])
            finally:
                self._due = None

        return release

    def close(self) -> None:
        """The exchange was deleted: its held messages go with it."""
        for _, timer in self._held.values():
            timer.cancel()
        self._held.clear()
