"""AMQP 1.0 messages to and from the core's message (whose form is AMQP 0-9-1's: a content header and a body),
as RabbitMQ 4.0 converts them between protocols (mc_amqpl:convert_from and convert_to, checked against
RabbitMQ 4.0.5 by publishing with one protocol and consuming with the other).

1.0 -> 0-9-1: a header's durable, priority and ttl are delivery-mode 2 (also without a header: RabbitMQ takes
a message without one as durable), priority and expiration; properties map to the basic properties of the same
name, group-id to app-id, creation-time to the timestamp in seconds; a string message-id or correlation-id is
kept, a ulong one becomes its decimal text, a uuid one "urn:uuid:...", a binary one the header x-message-id /
x-correlation-id; application properties and the message annotations named x-... become headers; one or more
data sections are the body, an amqp-value or amqp-sequence body is kept encoded, with type "amqp-1.0".

0-9-1 -> 1.0: a header (durable, priority, ttl, first-acquirer, delivery-count), message annotations with the
exchange and routing key (x-exchange, x-routing-key), the type as x-basic-type and the x-... headers;
properties; the other headers with simple values as application properties; the body as one data section,
or the encoded sections when the type is "amqp-1.0".
"""

from __future__ import annotations

import datetime
import struct
import uuid
from collections.abc import Mapping
from typing import Any, Final

from broker.core.model.message import Message
from protocol.amqp10.encode import encode
from protocol.amqp10.message import Message as Message10
from protocol.amqp10.message import encode_sections
from protocol.amqp10.sections import (
    AmqpSequence,
    AmqpValue,
    ApplicationProperties,
    Data,
    Header,
    MessageAnnotations,
    MessageSection,
    Properties,
)
from protocol.amqp10.types import Int, Symbol, Timestamp, UByte, UInt
from protocol.codec import decode_properties
from protocol.header_rewrite import encode_value

AMQP10_TYPE: Final = "amqp-1.0"
STREAM_OFFSET: Final = "x-stream-offset"
_CONTENT_PREFIX: Final = struct.Struct(">HHQH")
_INT_MIN, _INT_MAX = -(2**31), 2**31 - 1


class Converted:
    """A 1.0 message in the core's terms: the content-header payload and body, and what the core reads."""

    __slots__ = ("body", "delivery_mode", "expiration", "header_payload", "headers", "priority")

    def __init__(self, header_payload: bytes, body: bytes, headers: dict[str, Any] | None) -> None:
        self.header_payload = header_payload
        self.body = body
        self.headers = headers
        self.delivery_mode = 1
        self.priority: int | None = None
        self.expiration: str | None = None


def _short(value: str) -> bytes:
    raw = value.encode()
    return bytes([len(raw)]) + raw


def _id_text(value: Any, name: str, headers: dict[str, Any]) -> str | None:
    """message-id / correlation-id as 0-9-1's shortstr, or (binary) the header x-<name>."""
    if value is None:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, uuid.UUID):
        return f"urn:uuid:{value}"
    if isinstance(value, bytes):
        headers[f"x-{name}"] = bytearray(value)  # encode_value writes a bytearray as binary ('x')
        return None
    return str(int(value))


def _header_value(value: Any) -> tuple[bool, Any]:
    """An application property or annotation as a 0-9-1 header value (mc_amqpl's to_091): (kept, value)."""
    if value is None or isinstance(value, bool | str | int):
        return True, value
    if isinstance(value, Timestamp):
        return True, datetime.datetime.fromtimestamp(int(value) // 1000, tz=datetime.UTC)
    if isinstance(value, float):
        return True, int(value)  # RabbitMQ 4.0.5 hands a double over as a long, truncated
    if isinstance(value, bytes):
        return True, value  # as a longstr, as RabbitMQ 4.0.5 does
    return False, None


def to_amqp091(message: Message10) -> Converted:
    """The content-header payload, body and headers of ``message`` (mc_amqpl:convert_from(mc_amqp, ...))."""
    flags = 0
    fields: dict[int, bytes] = {}
    headers: dict[str, Any] = {}
    header = message.header
    # RabbitMQ 4.0.5 takes a message as durable unless its header says durable=false.
    durable = header is None or header.durable is not False
    priority = header.priority if header is not None else None
    ttl = header.ttl if header is not None else None
    props = message.properties
    annotations = message.message_annotations
    if annotations is not None:
        for key, value in annotations.value.items():
            if isinstance(key, str) and key.startswith("x-"):
                kept, converted = _header_value(value)
                if kept:
                    headers[str(key)] = converted
    if message.application_properties is not None:
        for key, value in message.application_properties.value.items():
            kept, converted = _header_value(value)
            if kept and isinstance(key, str):
                headers[str(key)] = converted
    body_kind = type(message.body[0]) if message.body else Data
    message_type = None if body_kind is Data else AMQP10_TYPE
    if props is not None:
        if props.content_type is not None:
            fields[15] = _short(props.content_type)
        if props.content_encoding is not None:
            fields[14] = _short(props.content_encoding)
        correlation_id = _id_text(props.correlation_id, "correlation-id", headers)
        if correlation_id is not None:
            fields[10] = _short(correlation_id)
        if props.reply_to is not None:
            fields[9] = _short(props.reply_to)
        message_id = _id_text(props.message_id, "message-id", headers)
        if message_id is not None:
            fields[7] = _short(message_id)
        if props.creation_time is not None:
            fields[6] = struct.pack(">Q", int(props.creation_time) // 1000)
        if props.user_id is not None:
            fields[4] = _short(props.user_id.decode("utf-8", "replace"))
        if props.group_id is not None:
            fields[3] = _short(props.group_id)
    if headers:
        table = b"".join(_short(key) + encode_value(value) for key, value in headers.items())
        fields[13] = struct.pack(">I", len(table)) + table
    if durable:
        fields[12] = b"\x02"
    if priority is not None:
        fields[11] = bytes([priority & 0xFF])
    expiration = str(int(ttl)) if ttl is not None else None
    if expiration is not None:
        fields[8] = _short(expiration)
    if message_type is not None:
        fields[5] = _short(message_type)
    for bit in fields:
        flags |= 1 << bit
    if body_kind is Data:
        body = b"".join(section.value for section in message.body if isinstance(section, Data))
    else:
        body = b"".join(
            entry.raw for entry in message.sections if isinstance(entry.section, AmqpValue | AmqpSequence)
        )
    payload = _CONTENT_PREFIX.pack(60, 0, len(body), flags) + b"".join(
        fields[bit] for bit in sorted(fields, reverse=True)
    )
    converted = Converted(payload, body, headers or None)
    converted.delivery_mode = 2 if durable else 1
    converted.priority = priority
    converted.expiration = expiration
    return converted


class Amqp10Message(Message):
    """A message published over AMQP 1.0: the core's 0-9-1 form, and the message annotations and bare message
    as published, which a 1.0 consumer gets back (RabbitMQ 4 keeps the message in the protocol it came in)."""

    def __init__(
        self,
        exchange: str,
        routing_key: str,
        converted: Converted,
        annotations: dict[Any, Any],
        bare: bytes,
        ttl: int | None,
        stream_offset: int | None = None,
    ) -> None:
        super().__init__(
            exchange,
            routing_key,
            converted.header_payload,
            converted.body,
            converted.headers,
            converted.delivery_mode,
            converted.priority,
            converted.expiration,
        )
        self.amqp10_annotations = annotations
        self.amqp10_bare = bare
        self.amqp10_ttl = ttl
        self.stream_offset = stream_offset  # a stream delivery's offset (with_content_header)

    @classmethod
    def published(
        cls, exchange: str, routing_key: str, converted: Converted, source: Message10
    ) -> Amqp10Message:
        annotations = source.message_annotations
        header = source.header
        return cls(
            exchange,
            routing_key,
            converted,
            dict(annotations.value) if annotations is not None else {},
            source.bare,
            header.ttl if header is not None else None,
        )

    def x_header(self, name: str) -> Any:
        """RabbitMQ 4.0.5 reads an x- value of a 1.0 message (a stream's filter value) from its message
        annotations only: an application property of the same name is not it (mc_amqp:x_header)."""
        return self.amqp10_annotations.get(name)

    def with_content_header(self, header_payload: bytes, headers: Mapping[str, Any]) -> Message:
        """A stream's delivery copy: the 1.0 form kept, with the offset it is delivered at."""
        converted = Converted(header_payload, self.body, dict(headers))
        converted.delivery_mode = self.delivery_mode
        converted.priority = self.priority
        converted.expiration = self.expiration
        offset = headers.get(STREAM_OFFSET)
        copy = Amqp10Message(
            self.exchange,
            self.routing_key,
            converted,
            self.amqp10_annotations,
            self.amqp10_bare,
            self.amqp10_ttl,
            offset if isinstance(offset, int) else None,
        )
        copy.journal, copy.message_id = self.journal, self.message_id
        return copy


def amqp10_payload(message: Amqp10Message, redelivered: bool, delivery_count: int) -> bytes:
    """The transfer payload of a 1.0-published message for a 1.0 consumer: a new header, the annotations
    with the exchange and routing key added (x-exchange, x-routing-key), the bare message as published."""
    header = Header(
        durable=message.delivery_mode == 2,
        priority=UByte(message.priority) if message.priority is not None else None,
        ttl=UInt(message.amqp10_ttl) if message.amqp10_ttl is not None else None,
        first_acquirer=not redelivered,
        delivery_count=UInt(delivery_count),
    )
    annotations = {
        **message.amqp10_annotations,
        Symbol("x-exchange"): message.exchange,
        Symbol("x-routing-key"): message.routing_key,
    }
    returns = (message.headers or {}).get("x-delivery-count")
    if isinstance(returns, int):
        # A quorum queue's count of returns (set in the 0-9-1 form at each requeue): an annotation after the
        # routing ones, a long, as RabbitMQ 4.0.5 adds it to a message kept in AMQP 1.0.
        annotations[Symbol("x-delivery-count")] = int(returns)
    if message.stream_offset is not None:
        annotations[Symbol(STREAM_OFFSET)] = int(message.stream_offset)
    return encode_sections([header, MessageAnnotations(annotations)]) + message.amqp10_bare


def _annotation_value(value: Any) -> tuple[bool, Any]:
    """A 0-9-1 header value as an AMQP 1.0 simple value (application properties allow no compound values)."""
    if value is None or isinstance(value, bool | str):
        return True, value
    if isinstance(value, int):
        return True, Int(value) if _INT_MIN <= value <= _INT_MAX else value
    if isinstance(value, float):
        return True, value
    if isinstance(value, datetime.datetime):
        return True, Timestamp(int(value.timestamp()) * 1000)
    if isinstance(value, bytes | bytearray):
        return True, bytes(value)
    return False, None


def from_amqp091(
    header_payload: bytes,
    body: bytes,
    exchange: str,
    routing_key: str,
    redelivered: bool,
    delivery_count: int,
) -> bytes:
    """The transfer payload RabbitMQ 4.0 sends a 1.0 consumer for a 0-9-1 message (mc_amqpl:convert_to)."""
    properties = decode_properties(header_payload)
    ttl = None
    if properties.expiration is not None:
        try:
            ttl = UInt(int(properties.expiration))
        except ValueError:
            ttl = None
    sections: list[MessageSection] = [
        Header(
            durable=properties.delivery_mode == 2,
            priority=UByte(properties.priority) if properties.priority is not None else None,
            ttl=ttl,
            first_acquirer=not redelivered,
            delivery_count=UInt(delivery_count),
        )
    ]
    annotations: dict[Any, Any] = {}
    if properties.message_type:
        annotations[Symbol("x-basic-type")] = properties.message_type
    application: dict[Any, Any] = {}
    stream_offset = None
    for key, value in (properties.headers or {}).items():
        kept, converted = _annotation_value(value)
        if not kept:
            continue
        if key == STREAM_OFFSET and isinstance(value, int):
            stream_offset = value  # a stream delivery's: a long, after x-routing-key, as 4.0.5 sends it
        elif key == "x-delivery-count" and isinstance(value, int):
            annotations[Symbol(key)] = value  # a long, as RabbitMQ 4.0.5 annotates it
        elif key.startswith("x-"):
            annotations[Symbol(key)] = converted
        else:
            application[key] = converted
    annotations[Symbol("x-exchange")] = exchange
    annotations[Symbol("x-routing-key")] = routing_key
    if stream_offset is not None:
        annotations[Symbol(STREAM_OFFSET)] = int(stream_offset)
    sections.append(MessageAnnotations(annotations))
    props = Properties(
        message_id=properties.message_id or None,
        user_id=properties.user_id.encode() if properties.user_id else None,
        reply_to=properties.reply_to or None,
        correlation_id=properties.correlation_id or None,
        content_type=Symbol(properties.content_type) if properties.content_type else None,
        content_encoding=Symbol(properties.content_encoding) if properties.content_encoding else None,
        creation_time=Timestamp(int(properties.timestamp.timestamp()) * 1000)
        if properties.timestamp
        else None,
        group_id=properties.app_id or None,
    )
    if props != Properties():
        sections.append(props)
    if application:
        sections.append(ApplicationProperties(application))
    head = encode_sections(sections)
    if properties.message_type == AMQP10_TYPE:
        return head + body  # the body is the 1.0 body sections as published
    return head + encode(Data(body))
