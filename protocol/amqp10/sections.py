"""Message sections (part 3, 3.2): header, delivery-annotations, message-annotations, properties,
application-properties, the body (data, amqp-sequence or amqp-value sections) and footer.

Header and properties are composites (described lists); the others describe one value (a map, binary, list or
any value), and are small dataclasses holding it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Final

from protocol.amqp10.composite import CompositeType, amqp, composite
from protocol.amqp10.errors import DecodeError
from protocol.amqp10.types import Described, Symbol, ULong


@composite(0x70, "amqp:header:list")
@dataclass(frozen=True, slots=True, kw_only=True)
class Header(CompositeType):
    durable: bool | None = amqp("boolean", None)
    priority: int | None = amqp("ubyte", None)
    ttl: int | None = amqp("uint", None)  # milliseconds
    first_acquirer: bool | None = amqp("boolean", None)
    delivery_count: int | None = amqp("uint", None)


@composite(0x73, "amqp:properties:list")
@dataclass(frozen=True, slots=True, kw_only=True)
class Properties(CompositeType):
    # message-id and correlation-id: ulong, uuid, binary or string (3.2.11-3.2.15), kept as decoded.
    message_id: Any = amqp("any", None)
    user_id: bytes | None = amqp("binary", None)
    to: str | None = amqp("string", None)
    subject: str | None = amqp("string", None)
    reply_to: str | None = amqp("string", None)
    correlation_id: Any = amqp("any", None)
    content_type: Symbol | None = amqp("symbol", None)
    content_encoding: Symbol | None = amqp("symbol", None)
    absolute_expiry_time: int | None = amqp("timestamp", None)
    creation_time: int | None = amqp("timestamp", None)
    group_id: str | None = amqp("string", None)
    group_sequence: int | None = amqp("uint", None)
    reply_to_group_id: str | None = amqp("string", None)


class _ValueSection:
    """A section that describes a single value: ``value`` is that value."""

    DESCRIPTOR: ClassVar[int]
    NAME: ClassVar[str]
    value: Any

    def to_described(self) -> Described:
        return Described(ULong(self.DESCRIPTOR), self.value)

    def _check(self, ok: bool, expected: str) -> None:
        if not ok:
            raise DecodeError(f"{self.NAME}: {expected} expected, {type(self.value).__name__} found")


@dataclass(frozen=True, slots=True)
class DeliveryAnnotations(_ValueSection):
    DESCRIPTOR = 0x71
    NAME = "amqp:delivery-annotations:map"
    value: dict[Any, Any]

    def __post_init__(self) -> None:
        self._check(isinstance(self.value, dict), "a map")


@dataclass(frozen=True, slots=True)
class MessageAnnotations(_ValueSection):
    DESCRIPTOR = 0x72
    NAME = "amqp:message-annotations:map"
    value: dict[Any, Any]

    def __post_init__(self) -> None:
        self._check(isinstance(self.value, dict), "a map")


@dataclass(frozen=True, slots=True)
class ApplicationProperties(_ValueSection):
    DESCRIPTOR = 0x74
    NAME = "amqp:application-properties:map"
    value: dict[Any, Any]

    def __post_init__(self) -> None:
        self._check(isinstance(self.value, dict), "a map")


@dataclass(frozen=True, slots=True)
class Data(_ValueSection):
    DESCRIPTOR = 0x75
    NAME = "amqp:data:binary"
    value: bytes

    def __post_init__(self) -> None:
        self._check(isinstance(self.value, bytes), "binary")


@dataclass(frozen=True, slots=True)
class AmqpSequence(_ValueSection):
    DESCRIPTOR = 0x76
    NAME = "amqp:amqp-sequence:list"
    value: list[Any]

    def __post_init__(self) -> None:
        self._check(isinstance(self.value, list), "a list")


@dataclass(frozen=True, slots=True)
class AmqpValue(_ValueSection):
    DESCRIPTOR = 0x77
    NAME = "amqp:amqp-value:*"
    value: Any


@dataclass(frozen=True, slots=True)
class Footer(_ValueSection):
    DESCRIPTOR = 0x78
    NAME = "amqp:footer:map"
    value: dict[Any, Any]

    def __post_init__(self) -> None:
        self._check(isinstance(self.value, dict), "a map")


BodySection = Data | AmqpSequence | AmqpValue
MessageSection = (
    Header
    | DeliveryAnnotations
    | MessageAnnotations
    | Properties
    | ApplicationProperties
    | Data
    | AmqpSequence
    | AmqpValue
    | Footer
)

_VALUE_SECTIONS: Final[dict[Any, type[_ValueSection]]] = {}
for _cls in (
    DeliveryAnnotations,
    MessageAnnotations,
    ApplicationProperties,
    Data,
    AmqpSequence,
    AmqpValue,
    Footer,
):
    _VALUE_SECTIONS[_cls.DESCRIPTOR] = _cls
    _VALUE_SECTIONS[_cls.NAME] = _cls
_LIST_SECTIONS: Final[dict[Any, type[Header | Properties]]] = {
    Header.DESCRIPTOR: Header,
    Header.NAME: Header,
    Properties.DESCRIPTOR: Properties,
    Properties.NAME: Properties,
}


def section_of(value: Any) -> MessageSection:
    """The section a decoded value is; anything else is ``amqp:decode-error``."""
    if type(value) is Described and isinstance(value.descriptor, ULong | Symbol):
        descriptor = value.descriptor
        listed = _LIST_SECTIONS.get(descriptor)
        if listed is not None:
            return listed.from_list(value.value)
        valued = _VALUE_SECTIONS.get(descriptor)
        if valued is not None:
            return valued(value.value)  # type: ignore[return-value, call-arg]
    raise DecodeError(f"not a message section: {value!r}")
