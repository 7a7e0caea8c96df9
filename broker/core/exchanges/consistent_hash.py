"""The ``x-consistent-hash`` exchange type (rabbitmq_consistent_hash_exchange), placing keys as RabbitMQ does.

The plugin (3.8 to 4.x, rabbit_exchange_type_consistent_hash) keeps a bucket map per exchange: each new
destination takes ``weight`` consecutive buckets (its binding key is the weight); a destination bound again,
under another key, gets none; removing ANY binding of a destination drops all its buckets and renumbers the
later ones down. A message goes to bucket ``jump_consistent_hash(K, N)`` (`jump_hash`) of the N buckets,
where K is ``erlang:phash2`` (`erlang_hash`) of the routing key, of the ``hash-header`` header's value or of
the ``hash-property`` property (correlation_id, message_id, or timestamp as decimal text); a missing one is
hashed as the atom ``undefined``, so it still routes (3.10, and 3.13.7 again after 3.13.0-3.13.6 crashed on
it). A header's value is hashed as the release the profile follows sees it: 3.13 hands the plugin the value
(strings as binaries, integers as themselves, timestamps in ms); 3.10 (``--profile rabbitmq-3.10``, the
oracle) hashes ``rabbit_misc:table_lookup``'s typed pair ``{longstr, V}`` (`typed_header`). Checked key by key
against RabbitMQ 3.10.8 (tests/compat/test_plugin_exchanges.py).
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Mapping
from decimal import Decimal
from typing import Any, ClassVar

from broker.core.exchanges.erlang_hash import Atom, phash2
from broker.core.exchanges.jump_hash import jump_consistent_hash
from broker.core.exchanges.typed_header import header_pair
from broker.core.model.arguments import amqp_type_name, erlang_binary, timestamp_seconds
from broker.core.model.message import Message
from broker.core.model.profile import Profile
from protocol.errors import ChannelError, ReplyCode

HASH_HEADER = "hash-header"
HASH_PROPERTY = "hash-property"
PROPERTIES = ("correlation_id", "message_id", "timestamp")
# Content-header property flag bits up to timestamp, with how to skip each: shortstr, table, octet.
_SHORTSTR, _TABLE, _OCTET = 1, 4, 0
_LAYOUT: tuple[tuple[int, int], ...] = (
    (15, _SHORTSTR),
    (14, _SHORTSTR),
    (13, _TABLE),
    (12, _OCTET),
    (11, _OCTET),
    (10, _SHORTSTR),
    (9, _SHORTSTR),
    (8, _SHORTSTR),
    (7, _SHORTSTR),
)
_PROPERTY_BITS = {"correlation_id": 10, "message_id": 7, "timestamp": 6}
_INTEGER = re.compile(rb"[+-]?[0-9]+")  # list_to_integer/1's syntax
_KEY_CACHE_SIZE = 4096


def _invalid(text: str) -> ChannelError:
    return ChannelError(ReplyCode.PRECONDITION_FAILED, text)


def property_value(payload: bytes, name: str) -> bytes | None:
    """correlation_id / message_id as bytes, timestamp as decimal text, read from a raw content header."""
    flags = int.from_bytes(payload[12:14], "big")
    wanted = _PROPERTY_BITS[name]
    if not flags & (1 << wanted):
        return None
    pos = 14
    for bit, kind in _LAYOUT:
        if bit == wanted:
            return payload[pos + 1 : pos + 1 + payload[pos]]
        if flags & (1 << bit):
            if kind == _SHORTSTR:
                pos += 1 + payload[pos]
            elif kind == _TABLE:
                pos += 4 + int.from_bytes(payload[pos : pos + 4], "big")
            else:
                pos += 1
    return str(int.from_bytes(payload[pos : pos + 8], "big")).encode()  # integer_to_binary(Timestamp)


def header_term(value: object) -> object:
    """A decoded header value as the Erlang term 3.13's mc:routing_headers hands the plugin."""
    if isinstance(value, datetime.datetime):
        return int(timestamp_seconds(value)) * 1000  # routing_value(timestamp, V) -> V * 1000
    return _field_value(value)


def _field_value(value: object) -> object:
    """rabbit_binary_parser's value of a field. Nested tables and arrays carry their fields' types, which
    decoding lost: `amqp_type_name` infers them (exact for what pika and most clients send)."""
    if isinstance(value, Mapping):
        return [(str(k), Atom(amqp_type_name(v)), _field_value(v)) for k, v in value.items()]
    if isinstance(value, list):
        return [(Atom(amqp_type_name(v)), _field_value(v)) for v in value]
    if isinstance(value, datetime.datetime):
        return int(timestamp_seconds(value))
    if isinstance(value, Decimal):
        sign, digits, exponent = value.as_tuple()
        unscaled = int("".join(map(str, digits)) or "0")
        return (-int(exponent), -unscaled if sign else unscaled)
    return value


class ConsistentHashExchangeType:
    type_name: ClassVar[str] = "x-consistent-hash"
    unique_destinations: ClassVar[bool] = True
    # One destination from the routing keys: hd(RoutingKeys), so CC/BCC keys change nothing
    # (read by broker.core.topology.sender_selected).
    hashes_routing_keys: ClassVar[bool] = True

    __slots__ = ("_buckets", "_placed", "hash_header", "hash_property", "typed_header")

    def __init__(self) -> None:
        self._buckets: list[object] = []  # bucket number -> destination
        # routing key -> its destination for the current buckets (bounded; cleared when they change): a
        # repeated key costs one lookup instead of ~7 us of phash2 and jump hash
        # (benchmarks/test_plugin_routing.py: 0.5 against 8.7 us per route)
        self._placed: dict[str, tuple[object, ...]] = {}
        self.hash_header: str | None = None
        self.hash_property: str | None = None
        self.typed_header = False  # hash a header as its {Type, Value} pair (3.10)

    @classmethod
    def validate(cls, arguments: Mapping[str, Any]) -> None:
        header, prop = arguments.get(HASH_HEADER), arguments.get(HASH_PROPERTY)
        header = header if isinstance(header, str) else None  # the plugin reads longstr values only
        prop = prop if isinstance(prop, str) else None
        if header is not None and prop is not None:
            raise _invalid("hash-header and hash-property are mutually exclusive")
        if prop is not None and prop not in PROPERTIES:
            raise _invalid(f"Unsupported property: {prop}")

    def configure(self, arguments: Mapping[str, Any]) -> None:
        """Called once with the exchange's declare arguments (the type's hashing mode)."""
        header, prop = arguments.get(HASH_HEADER), arguments.get(HASH_PROPERTY)
        self.hash_header = header if isinstance(header, str) else None
        self.hash_property = prop if isinstance(prop, str) else None

    def follow_profile(self, profile: Profile) -> None:
        """Called once with the vhost's version profile: how a header value is hashed."""
        self.typed_header = profile.hash_header_typed_pair

    def bind(self, destination: object, routing_key: str, arguments: Mapping[str, Any]) -> None:
        raw = routing_key.encode()
        if not _INTEGER.fullmatch(raw):
            raise _invalid(f"The binding key must be an integer: {erlang_binary(raw)}")
        weight = int(raw)
        if weight < 1:
            raise _invalid("The binding key must be greater than 0")
        if not any(bucket is destination for bucket in self._buckets):
            self._buckets.extend([destination] * weight)
            self._placed.clear()

    def unbind(self, destination: object, routing_key: str, arguments: Mapping[str, Any]) -> None:
        self._buckets = [bucket for bucket in self._buckets if bucket is not destination]
        self._placed.clear()

    def route(self, message: Message) -> tuple[object, ...]:
        buckets = self._buckets
        if not buckets:
            return ()
        if len(buckets) == 1:
            return (buckets[0],)
        if self.hash_header is not None or self.hash_property is not None:
            return (buckets[jump_consistent_hash(self._hash_on(message), len(buckets))],)
        key = message.routing_key
        placed = self._placed.get(key)
        if placed is None:
            if len(self._placed) >= _KEY_CACHE_SIZE:
                self._placed.clear()
            bucket = jump_consistent_hash(phash2(key), len(buckets))
            placed = self._placed[key] = (buckets[bucket],)
        return placed

    def _hash_on(self, message: Message) -> int:
        """The integer K the plugin seeds its jump hash with, for hash-header or hash-property."""
        if self.hash_header is not None and self.typed_header:
            try:
                return phash2(header_pair(message.header_payload, self.hash_header))
            except RecursionError:  # a header nested past Python's stack: its inferred types instead
                value = (message.headers or {}).get(self.hash_header)
                return phash2((Atom(amqp_type_name(value)), _field_value(value)))
        if self.hash_header is not None:
            value = header_term((message.headers or {}).get(self.hash_header))
            if isinstance(value, list):  # jump_consistent_hash(KeyList): its head, [] itself (4.x)
                value = value[0] if value else []
            return value if type(value) is int else phash2(value)
        assert self.hash_property is not None
        return phash2(property_value(message.header_payload, self.hash_property))
