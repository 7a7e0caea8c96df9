"""The exchange types clients may declare, by type name: adding a type is one module plus one line here."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping

from broker.core.exchanges.base import ExchangeType
from broker.core.exchanges.delayed import DelayedMessageExchangeType
from broker.core.exchanges.direct import DirectExchangeType
from broker.core.exchanges.fanout import FanoutExchangeType
from broker.core.exchanges.headers import HeadersExchangeType
from broker.core.exchanges.topic import TopicExchangeType


# Plugin types (RabbitMQ needs rabbitmq-plugins enable; here they are always available), imported at their
# first declare or recovery: a broker that never uses one does not load it. x-delayed-message is
# loaded anyway (its durable store is part of recovery).
def _consistent_hash() -> type[ExchangeType]:
    from broker.core.exchanges.consistent_hash import ConsistentHashExchangeType

    return ConsistentHashExchangeType


def _random() -> type[ExchangeType]:
    from broker.core.exchanges.x_random import RandomExchangeType

    return RandomExchangeType


def _recent_history() -> type[ExchangeType]:
    from broker.core.exchanges.recent_history import RecentHistoryExchangeType

    return RecentHistoryExchangeType


def _modulus_hash() -> type[ExchangeType]:
    from broker.core.exchanges.modulus_hash import ModulusHashExchangeType

    return ModulusHashExchangeType


_PLUGIN_TYPES: dict[str, Callable[[], type[ExchangeType]]] = {
    "x-consistent-hash": _consistent_hash,
    "x-random": _random,
    "x-recent-history": _recent_history,
    "x-modulus-hash": _modulus_hash,
}


class ExchangeTypes(Mapping[str, type[ExchangeType]]):
    """Type name -> type, constructed with no arguments, one instance per exchange. The default exchange is
    not here: it is never declared, and `create_exchange` builds it (it needs the vhost's queue lookup)."""

    def __init__(
        self, loaded: Mapping[str, type[ExchangeType]], lazy: Mapping[str, Callable[[], type[ExchangeType]]]
    ) -> None:
        self._loaded = dict(loaded)
        self._lazy = dict(lazy)

    def __getitem__(self, type_name: str) -> type[ExchangeType]:
        loaded = self._loaded.get(type_name)
        if loaded is not None:
            return loaded
        cls = self._loaded[type_name] = self._lazy[type_name]()
        return cls

    def __iter__(self) -> Iterator[str]:
        yield from self._loaded
        yield from (name for name in self._lazy if name not in self._loaded)

    def __len__(self) -> int:
        return len(self._loaded.keys() | self._lazy.keys())

    def __contains__(self, type_name: object) -> bool:
        return type_name in self._loaded or type_name in self._lazy


EXCHANGE_TYPES = ExchangeTypes(
    {
        cls.type_name: cls
        for cls in (
            DirectExchangeType,
            FanoutExchangeType,
            TopicExchangeType,
            HeadersExchangeType,
            DelayedMessageExchangeType,
        )
    },
    _PLUGIN_TYPES,
)
# x-delayed-message wraps one of the types above (its x-delayed-type): it looks them up here.
DelayedMessageExchangeType.inner_types = EXCHANGE_TYPES
