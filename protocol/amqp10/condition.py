"""The error composite (part 2, 2.8.14) that close, end, detach and the rejected outcome carry."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from protocol.amqp10.composite import CompositeType, amqp, composite
from protocol.amqp10.types import Symbol


@composite(0x1D, "amqp:error:list")
@dataclass(frozen=True, slots=True, kw_only=True)
class Error(CompositeType):
    condition: Symbol = amqp("symbol")
    description: str | None = amqp("string", None)
    info: dict[Any, Any] | None = amqp("map", None)
