"""The ``x-modulus-hash`` exchange type (rabbitmq_sharding's), placing keys as RabbitMQ does.

rabbit_sharding_exchange_type_modulus_hash (3.10 to 4.x) lists the exchange's bindings in the order of
RabbitMQ's ordered route table (by binding key, then destination: exchanges before queues, then by name; a
destination bound under two keys is listed twice) and sends the message to entry
``erlang:phash2(RoutingKeys, 2**27) rem N``. RoutingKeys is the list of the message's routing keys:
``[RoutingKey]`` followed by the CC then the BCC header's keys (rabbit_basic:header_routes). Checked key
by key against RabbitMQ 3.10.8 (tests/compat/test_plugin_exchanges.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from broker.core.exchanges.erlang_hash import phash2
from broker.core.model.message import Message

_KEY_CACHE_SIZE = 4096


def _route_order(entry: tuple[str, object]) -> tuple[bytes, int, bytes]:
    """A binding's place in rabbit_route: #binding{key, destination = #resource{kind, name}} term order
    (atoms compare by name, so 'exchange' < 'queue'; binaries compare bytewise)."""
    key, destination = entry
    is_queue = 0 if hasattr(destination, "type_name") else 1  # only exchanges have a type
    return key.encode(), is_queue, str(getattr(destination, "name", "")).encode()


class ModulusHashExchangeType:
    type_name: ClassVar[str] = "x-modulus-hash"
    unique_destinations: ClassVar[bool] = True  # one destination per route
    # One destination from all the routing keys together (read by broker.core.topology.sender_selected).
    hashes_routing_keys: ClassVar[bool] = True

    __slots__ = ("_bindings", "_destinations", "_key_hashes")

    def __init__(self) -> None:
        self._bindings: list[tuple[str, object]] = []  # in bind order; sorted into _destinations
        self._destinations: tuple[object, ...] = ()
        self._key_hashes: dict[str, int] = {}

    @classmethod
    def validate(cls, arguments: Mapping[str, Any]) -> None:
        """The plugin accepts any declare arguments."""

    def bind(self, destination: object, routing_key: str, arguments: Mapping[str, Any]) -> None:
        self._bindings.append((routing_key, destination))
        self._sort()

    def unbind(self, destination: object, routing_key: str, arguments: Mapping[str, Any]) -> None:
        try:
            self._bindings.remove((routing_key, destination))
        except ValueError:
            return
        self._sort()

    def _sort(self) -> None:
        self._destinations = tuple(d for _, d in sorted(self._bindings, key=_route_order))

    def route(self, message: Message) -> tuple[object, ...]:
        destinations = self._destinations
        if not destinations:
            return ()
        key = message.routing_key
        headers = message.headers
        if headers is not None and ("CC" in headers or "BCC" in headers):
            all_keys = phash2([key, *_header_routes(headers, "CC"), *_header_routes(headers, "BCC")])
            return (destinations[all_keys % len(destinations)],)
        hashed = self._key_hashes.get(key)
        if hashed is None:
            if len(self._key_hashes) >= _KEY_CACHE_SIZE:
                self._key_hashes.clear()
            hashed = self._key_hashes[key] = phash2([key])
        return (destinations[hashed % len(destinations)],)


def _header_routes(headers: Mapping[str, Any], name: str) -> list[str | bytes]:
    """The keys of a CC or BCC header: its array's string items (as broker.core.topology.dead_letter reads
    them)."""
    value = headers.get(name)
    return [item for item in value if isinstance(item, str | bytes)] if isinstance(value, list) else []
