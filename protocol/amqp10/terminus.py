"""The source and target of a link (part 3, 3.5), which attach carries, and the node lifetime policies a
dynamic node's properties may name."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from protocol.amqp10.composite import CompositeType, amqp, composite
from protocol.amqp10.types import Described, Symbol


@composite(0x28, "amqp:source:list")
@dataclass(frozen=True, slots=True, kw_only=True)
class Source(CompositeType):
    address: str | None = amqp("string", None)
    # terminus-durability: 0 none, 1 configuration, 2 unsettled-state.
    durable: int | None = amqp("uint", None)
    expiry_policy: Symbol | None = amqp("symbol", None)
    timeout: int | None = amqp("uint", None)
    dynamic: bool | None = amqp("boolean", None)
    dynamic_node_properties: dict[Any, Any] | None = amqp("map", None)
    distribution_mode: Symbol | None = amqp("symbol", None)
    # filter-set: symbol keys, described filters (e.g. rabbitmq:stream-offset-spec), kept as decoded.
    filter: dict[Any, Any] | None = amqp("map", None)
    default_outcome: CompositeType | Described | None = amqp("composite", None)
    outcomes: tuple[Symbol, ...] | None = amqp("symbols", None)
    capabilities: tuple[Symbol, ...] | None = amqp("symbols", None)


@composite(0x29, "amqp:target:list")
@dataclass(frozen=True, slots=True, kw_only=True)
class Target(CompositeType):
    address: str | None = amqp("string", None)
    durable: int | None = amqp("uint", None)
    expiry_policy: Symbol | None = amqp("symbol", None)
    timeout: int | None = amqp("uint", None)
    dynamic: bool | None = amqp("boolean", None)
    dynamic_node_properties: dict[Any, Any] | None = amqp("map", None)
    capabilities: tuple[Symbol, ...] | None = amqp("symbols", None)


@composite(0x2B, "amqp:delete-on-close:list")
@dataclass(frozen=True, slots=True, kw_only=True)
class DeleteOnClose(CompositeType):
    pass


@composite(0x2C, "amqp:delete-on-no-links:list")
@dataclass(frozen=True, slots=True, kw_only=True)
class DeleteOnNoLinks(CompositeType):
    pass


@composite(0x2D, "amqp:delete-on-no-messages:list")
@dataclass(frozen=True, slots=True, kw_only=True)
class DeleteOnNoMessages(CompositeType):
    pass


@composite(0x2E, "amqp:delete-on-no-links-or-messages:list")
@dataclass(frozen=True, slots=True, kw_only=True)
class DeleteOnNoLinksOrMessages(CompositeType):
    pass
