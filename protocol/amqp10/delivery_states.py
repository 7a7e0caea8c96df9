"""Delivery states (part 2, 2.7.6 and part 3, 3.4): received, and the outcomes accepted, rejected, released
and modified, which a disposition or a transfer carries."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from protocol.amqp10.composite import CompositeType, amqp, composite
from protocol.amqp10.condition import Error
from protocol.amqp10.types import Described


@composite(0x23, "amqp:received:list")
@dataclass(frozen=True, slots=True, kw_only=True)
class Received(CompositeType):
    section_number: int = amqp("uint")
    section_offset: int = amqp("ulong")


@composite(0x24, "amqp:accepted:list")
@dataclass(frozen=True, slots=True, kw_only=True)
class Accepted(CompositeType):
    pass


@composite(0x25, "amqp:rejected:list")
@dataclass(frozen=True, slots=True, kw_only=True)
class Rejected(CompositeType):
    error: Error | Described | None = amqp("composite", None)


@composite(0x26, "amqp:released:list")
@dataclass(frozen=True, slots=True, kw_only=True)
class Released(CompositeType):
    pass


@composite(0x27, "amqp:modified:list")
@dataclass(frozen=True, slots=True, kw_only=True)
class Modified(CompositeType):
    delivery_failed: bool | None = amqp("boolean", None)
    undeliverable_here: bool | None = amqp("boolean", None)
    message_annotations: dict[Any, Any] | None = amqp("map", None)


# A delivery state we know, or a Described one we do not (a transaction's declared/transactional-state).
DeliveryState = Received | Accepted | Rejected | Released | Modified | Described
