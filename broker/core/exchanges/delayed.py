"""The ``x-delayed-message`` exchange type (rabbitmq-delayed-message-exchange plugin).

Declared with ``x-delayed-type`` naming the routing it wraps (direct, topic, …). A message with a positive
integer ``x-delay`` header (milliseconds) is held on the broker's clock and routed through the wrapped type
when due; one without routes at once. As in the plugin, a held message routes nowhere at publish time, so a
mandatory publish is returned and an alternate exchange gets it (plugin README: mandatory is not supported).

A durable exchange writes what it holds to the store (the plugin keeps every held delivery of any
delivery_mode in a Mnesia disc table, written before the publish returns): the message and its due time go
in the publish's batch, so a publisher confirm waits for that commit, and leave in the batch that routes them
when due, so a crash never both loses and duplicates one. After a restart they are held again; those that
came due while the broker was down are routed at once, as the plugin's first timer does. Deleting the
exchange drops them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from broker.core.model.message import Message
from protocol.errors import ChannelError, ReplyCode

if TYPE_CHECKING:
    from broker.core.exchanges.base import ExchangeType
    from broker.core.model.clock import Clock, TimerHandle

DELAYED_TYPE = "x-delayed-type"


class DelayStore(Protocol):
    """The durable store's calls for the messages a durable delayed exchange holds (part of `Persistence`)."""

    def delayed_held(self, vhost: str, exchange: str, due_ms: int, message: Message) -> int:
        """``message`` is held until ``due_ms`` (epoch ms); returns its key in the store."""
        ...

    def delayed_released(self, key: int) -> None:
        """The held message ``key`` came due and was routed (in this batch)."""
        ...


class DelayHost(Protocol):
    clock: Clock
    name: str  # the vhost

    def publish_held(self, exchange_name: str, message: Message) -> Iterable[Any]:
        """Called when a held message is due: route it through the exchange now (the queues it reached)."""
        ...


class DelayedMessageExchangeType:
    type_name: ClassVar[str] = "x-delayed-message"
    unique_destinations: ClassVar[bool] = False
    # The types ``x-delayed-type`` may name: handed in by the registry, which lists this type among them.
    inner_types: ClassVar[Mapping[str, type[ExchangeType]]] = {}

    __slots__ = ("_due", "_held", "_host", "_name", "_next", "_store", "inner")

    def __init__(self) -> None:
        self.inner: ExchangeType | None = None
        self._host: DelayHost | None = None
        self._store: DelayStore | None = None
        self._name = ""
        # local key -> (message, timer, store key or 0 when not stored, routed copies marked redelivered)
        self._held: dict[int, tuple[Message, TimerHandle, int, bool]] = {}
        self._next = 0
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

    def attach(self, host: DelayHost, exchange_name: str, store: DelayStore | None = None) -> None:
        """Called by the vhost once the exchange exists: the clock, the way back in for due messages, and
        the store when the exchange is durable and the broker has one."""
        self._host = host
        self._name = exchange_name
        self._store = store

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
        clock = self._host.clock
        stored = 0
        if self._store is not None:
            stored = self._store.delayed_held(self._host.name, self._name, clock.now_ms() + delay, message)
        self._hold(message, delay, stored, False)
        return ()

    def restore(self, message: Message, due_ms: int, stored: int, after_crash: bool = False) -> None:
        """A held message back from the store at start-up; one already due goes at the first loop turn.

        After a crash, one that was due before the restart may have been routed and delivered before the
        crash in a batch that never committed (a delivery leaves before its commit): it is routed again, so
        its copies are marked redelivered, as recovery marks every recovered message after a crash."""
        assert self._host is not None
        delay_ms = due_ms - self._host.clock.now_ms()
        self._hold(message, max(0, delay_ms), stored, after_crash and delay_ms <= 0)

    def _hold(self, message: Message, delay_ms: int, stored: int, redelivered: bool) -> None:
        assert self._host is not None
        self._next += 1
        key = self._next
        timer = self._host.clock.call_later(delay_ms / 1000, self._release_callback(key))
        self._held[key] = (message, timer, stored, redelivered)

    def _release_callback(self, key: int) -> Callable[[], None]:
        def release() -> None:
            held = self._held.pop(key, None)
            if held is None or self._host is None:
                return
            message, _timer, stored, redelivered = held
            self._due = message
            try:
                queues = self._host.publish_held(self._name, message)
                if redelivered:
                    for queue in queues:
                        _mark_redelivered(queue, message)
            finally:
                self._due = None
                if stored and self._store is not None:
                    # The same loop turn as the routing's own writes: one batch, so a crash cannot keep
                    # both the held copy and the queued one, nor lose both.
                    self._store.delayed_released(stored)

        return release

    def close(self) -> None:
        """The exchange was deleted: its held messages go with it."""
        for _, timer, _stored, _redelivered in self._held.values():
            timer.cancel()
        self._held.clear()


def _mark_redelivered(queue: Any, message: Message) -> None:
    """The copy of ``message`` just enqueued in ``queue`` (the newest holding it) goes out redelivered, and a
    stored one is marked delivered, so a later restart keeps the flag."""
    for envelope in reversed(list(queue.ready_envelopes())):
        if envelope.message is message:
            envelope.redelivered = True
            if queue.store is not None and message.delivery_mode == 2 and queue.durable:
                queue.store.message_delivered(queue, envelope)
            return
