"""The `ExchangeType` protocol: one exchange's routing state, compiled at bind time, read at route time."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, ClassVar, Protocol

from broker.core.model.message import Message


class ExchangeType(Protocol):
    """The routing state of ONE exchange of a type (RabbitMQ's rabbit_exchange_type behaviour, made stateful).

    One instance per exchange, created by `broker.core.exchanges.exchange.create_exchange`. A type's module
    holds the class; `broker.core.exchanges.registry` lists every type (a plugin type adds one module and one
    registry line). ``route`` is the hot path: everything it needs (split topic words, parsed ``x-match``) is
    prepared in ``bind``.


    Optional hooks, looked up with getattr so built-in types need not define them: ``configure(arguments)``
    right after construction with the exchange's declare arguments; ``attach(vhost, exchange_name)`` once
    the vhost holds the exchange (types that need the clock or must re-publish, e.g. x-delayed-message);
    ``close()`` when the exchange is deleted.
    """

    type_name: ClassVar[str]
    # True when ``route`` never returns the same destination twice; the router then skips its dedup.
    unique_destinations: ClassVar[bool]

    @classmethod
    def validate(cls, arguments: Mapping[str, Any]) -> None:
        """Called on exchange.declare of a NEW exchange, before the instance exists, with its arguments.

        Raises ChannelError with RabbitMQ's code and text where RabbitMQ's type validates
        (rabbit_exchange_type ``validate/1``); the four built-in types accept everything, as RabbitMQ's do.
        """
        ...

    def bind(self, destination: object, routing_key: str, arguments: Mapping[str, Any]) -> None:
        """Called by `BindingTable.add` once per NEW distinct binding (source, destination, key, arguments).

        Validates the binding first (RabbitMQ's ``validate_binding/2``: errors are ChannelError 406 with its
        text) and only then changes state, so a rejected binding leaves no trace. The same destination may
        be bound several times with different keys or arguments; each call is one binding.
        """
        ...

    def unbind(self, destination: object, routing_key: str, arguments: Mapping[str, Any]) -> None:
        """Called by `BindingTable` when a binding previously passed to ``bind`` goes away (unbind, or
        deletion of its destination or source). Undoes exactly that one binding; an unknown one is ignored."""
        ...

    def route(self, message: Message) -> Iterable[object]:
        """Called by the Router for every message through this exchange: the destinations (queues, or
        `Exchange` objects for exchange-to-exchange bindings) its bindings select. Duplicates are allowed (the
        router dedups); an empty result makes the router try the alternate exchange. The caller must not
        mutate what it gets (types return their cached tuples)."""
        ...
