"""The ``x-consistent-hash`` exchange type (rabbitmq-consistent-hash-exchange plugin).

Each binding's key is its weight: that many points on a 2**32 hash ring. A message goes to the destination
owning the first point at or after the hash of its routing key (or of the ``hash-header`` header /
``hash-property`` property named by the exchange arguments), wrapping around. The ring depends only on the
bindings, so a key always lands on the same queue while the bindings stay the same (the plugin hashes with
erlang:phash2; we use CRC-32, so placement is stable but not the plugin's bit for bit).
"""

from __future__ import annotations

import zlib
from bisect import bisect_left
from collections.abc import Mapping
from typing import Any, ClassVar

from broker.core.message import Message
from protocol.errors import ChannelError, ReplyCode

HASH_HEADER = "hash-header"
HASH_PROPERTY = "hash-property"
# Basic properties the plugin can hash on, with their content-header flag bit (shortstr ones only, plus the
# decoded priority/delivery_mode); read from the raw header payload at route time.
_SHORTSTR_BITS = {"message_id": 7, "correlation_id": 10, "type": 5, "app_id": 3, "reply_to": 9, "user_id": 4}
_LAYOUT = (
    (15, 1),
    (14, 1),
    (13, 4),
    (12, 0),
    (11, 0),
    (10, 1),
    (9, 1),
    (8, 1),
    (7, 1),
    (6, 8),
    (5, 1),
    (4, 1),
)


def _hash(value: str | bytes) -> int:
    return zlib.crc32(value.encode() if isinstance(value, str) else value)


def _shortstr_property(payload: bytes, wanted: int) -> str | None:
    """A shortstr property of a raw content header (kinds: 1 shortstr, 4 table, 0 octet, 8 longlong)."""
    flags = int.from_bytes(payload[12:14], "big")
    if not flags & (1 << wanted):
        return None
    pos = 14
    for bit, kind in _LAYOUT:
        if bit == wanted:
            return payload[pos + 1 : pos + 1 + payload[pos]].decode("utf-8", "replace")
        if not flags & (1 << bit):
            continue
        if kind == 1:
            pos += 1 + payload[pos]
        elif kind == 4:
            pos += 4 + int.from_bytes(payload[pos : pos + 4], "big")
        elif kind == 0:
            pos += 1
        else:
            pos += 8
    return None


def _invalid_binding(text: str) -> ChannelError:
    return ChannelError(ReplyCode.PRECONDITION_FAILED, text)


class ConsistentHashExchangeType:
    type_name: ClassVar[str] = "x-consistent-hash"
    unique_destinations: ClassVar[bool] = True

    __slots__ = ("_bindings", "_points", "_ring", "hash_header", "hash_property")

    def __init__(self) -> None:
        self._bindings: dict[tuple[object, str], int] = {}
        self._ring: list[int] = []
        self._points: list[object] = []
        self.hash_header: str | None = None
        self.hash_property: str | None = None

    @classmethod
    def validate(cls, arguments: Mapping[str, Any]) -> None:
        if HASH_HEADER in arguments and HASH_PROPERTY in arguments:
            raise _invalid_binding(
                "hash-header and hash-property are mutually exclusive, please use only one of them"
            )
        prop = arguments.get(HASH_PROPERTY)
        if prop is not None and prop not in (*_SHORTSTR_BITS, "priority", "delivery_mode"):
            raise _invalid_binding(f"Unsupported property: {prop}")

    def configure(self, arguments: Mapping[str, Any]) -> None:
        """Called once with the exchange's declare arguments (the type's hashing mode)."""
        header, prop = arguments.get(HASH_HEADER), arguments.get(HASH_PROPERTY)
        self.hash_header = header if isinstance(header, str) else None
        self.hash_property = prop if isinstance(prop, str) else None

    def bind(self, destination: object, routing_key: str, arguments: Mapping[str, Any]) -> None:
        try:
            weight = int(routing_key)
        except ValueError:
            raise _invalid_binding(f'The binding key must be an integer: <<"{routing_key}">>') from None
        if weight < 1:
            raise _invalid_binding("The binding key must be greater than 0")
        self._bindings[(destination, routing_key)] = weight
        self._rebuild()

    def unbind(self, destination: object, routing_key: str, arguments: Mapping[str, Any]) -> None:
        if self._bindings.pop((destination, routing_key), None) is not None:
            self._rebuild()

    def _rebuild(self) -> None:
        points: list[tuple[int, int, object]] = []
        for index, ((destination, key), weight) in enumerate(self._bindings.items()):
            name = getattr(destination, "name", str(index))
            for point in range(weight):
                points.append((_hash(f"{name}\x00{key}\x00{point}"), index, destination))
        points.sort(key=lambda item: (item[0], item[1]))
        self._ring = [point for point, _, _ in points]
        self._points = [destination for _, _, destination in points]

    def _key(self, message: Message) -> str | bytes | None:
        if self.hash_header is not None:
            value = (message.headers or {}).get(self.hash_header)
            return None if value is None else value if isinstance(value, str | bytes) else repr(value)
        prop = self.hash_property
        if prop is None:
            return message.routing_key
        if prop == "priority":
            return None if message.priority is None else str(message.priority)
        if prop == "delivery_mode":
            return str(message.delivery_mode)
        return _shortstr_property(message.header_payload, _SHORTSTR_BITS[prop])

    def route(self, message: Message) -> tuple[object, ...]:
        if not self._ring:
            return ()
        key = self._key(message)
        if key is None:
            return ()  # the plugin routes nowhere when the header/property is missing
        index = bisect_left(self._ring, _hash(key))
        return (self._points[index % len(self._points)],)
