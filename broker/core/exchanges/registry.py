"""The exchange types clients may declare, by type name: adding a type is one module plus one line here."""

from __future__ import annotations

from broker.core.exchanges.base import ExchangeType
from broker.core.exchanges.consistent_hash import ConsistentHashExchangeType
from broker.core.exchanges.delayed import DelayedMessageExchangeType
from broker.core.exchanges.direct import DirectExchangeType
from broker.core.exchanges.fanout import FanoutExchangeType
from broker.core.exchanges.headers import HeadersExchangeType
from broker.core.exchanges.modulus_hash import ModulusHashExchangeType
from broker.core.exchanges.recent_history import RecentHistoryExchangeType
from broker.core.exchanges.topic import TopicExchangeType
from broker.core.exchanges.x_random import RandomExchangeType

# Constructed with no arguments, one instance per exchange. The default exchange is not here: it is never
# declared, and `create_exchange` builds it (it needs the vhost's queue lookup).
EXCHANGE_TYPES: dict[str, type[ExchangeType]] = {
    DirectExchangeType.type_name: DirectExchangeType,
    FanoutExchangeType.type_name: FanoutExchangeType,
    TopicExchangeType.type_name: TopicExchangeType,
    HeadersExchangeType.type_name: HeadersExchangeType,
    # Plugin types (RabbitMQ needs rabbitmq-plugins enable; here they are always available).
    ConsistentHashExchangeType.type_name: ConsistentHashExchangeType,
    DelayedMessageExchangeType.type_name: DelayedMessageExchangeType,
    RandomExchangeType.type_name: RandomExchangeType,
    RecentHistoryExchangeType.type_name: RecentHistoryExchangeType,
    ModulusHashExchangeType.type_name: ModulusHashExchangeType,
}
# x-delayed-message wraps one of the types above (its x-delayed-type): it looks them up here.
DelayedMessageExchangeType.inner_types = EXCHANGE_TYPES
