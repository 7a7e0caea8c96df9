"""pamqp-backed codec for every frame that is not on the hot path, with RabbitMQ's decode errors.

Decoding walks the method's fields with pamqp's decoders but, like the generated
``decode_method_fields/2`` of rabbit_framing_amqp_0_9_1 (deps/rabbit_common/codegen.py), insists the fields
use the payload exactly: truncated or trailing bytes are ``501 FRAME_ERROR - cannot decode <<...>>``.
``longlong`` fields are 64-bit unsigned (as in RabbitMQ; pamqp packs them signed). Encoding skips pamqp's
``validate()``: its name regexes reject names RabbitMQ accepts. The hot-path codecs and method-id constants
live in ``protocol.fastpath`` and are re-exported here.
"""

from __future__ import annotations

import inspect
import struct
import typing
from typing import Any, Final, TypeVar

from pamqp import base, commands
from pamqp import encode as pamqp_encode

from protocol.errors import HardError, ReplyCode
from protocol.fastpath import (
    BASIC_ACK,
    BASIC_DELIVER,
    BASIC_GET_OK,
    BASIC_NACK,
    BASIC_PUBLISH,
    BASIC_REJECT,
    BASIC_RETURN,
    cannot_decode,
    malformed_utf8,
    method_frame_id,
)
from protocol.field_table import FieldTableError, decode_table_at, timestamp_value

__all__ = [
    "BASIC_ACK",
    "BASIC_DELIVER",
    "BASIC_GET_OK",
    "BASIC_NACK",
    "BASIC_PUBLISH",
    "BASIC_REJECT",
    "BASIC_RETURN",
    "HEARTBEAT_FRAME",
    "METHODS",
    "METHOD_INDEX",
    "AccessRequest",
    "AccessRequestOk",
    "decode_method",
    "decode_properties",
    "encode_content",
    "encode_header_payload",
    "encode_heartbeat",
    "encode_method",
    "make_method",
    "method_frame_id",
]

F = TypeVar("F", bound=base.Frame)

_FRAME_HEADER = struct.Struct("!BHI")
_U16 = struct.Struct("!H")
_U32 = struct.Struct("!I")
_U64 = struct.Struct("!Q")
_CONTENT_PREFIX = struct.Struct("!HHQ")
_END: Final = b"\xce"
HEARTBEAT_FRAME: Final = b"\x08\x00\x00\x00\x00\x00\x00\xce"


class AccessRequest(base.Frame):
    """access.request (30, 10): absent from pamqp; RabbitMQ keeps it as a no-op answered with ticket 1."""

    # Wire order (pamqp marshals slots in order), not sorted.
    __slots__: typing.ClassVar[list[str]] = ["realm", "exclusive", "passive", "active", "write", "read"]  # noqa: RUF023
    frame_id: typing.ClassVar[int] = 10
    index: typing.ClassVar[int] = 0x001E000A
    name: typing.ClassVar[str] = "Access.Request"
    synchronous: typing.ClassVar[bool] = True
    _realm = "shortstr"
    _exclusive = _passive = _active = _write = _read = "bit"

    def __init__(self, realm: str = "/data", active: bool = True, read: bool = True) -> None:
        self.realm = realm
        self.exclusive = self.passive = False
        self.active = active
        self.write = True
        self.read = read


class AccessRequestOk(base.Frame):
    """access.request-ok (30, 11)."""

    __slots__: typing.ClassVar[list[str]] = ["ticket"]
    frame_id: typing.ClassVar[int] = 11
    index: typing.ClassVar[int] = 0x001E000B
    name: typing.ClassVar[str] = "Access.RequestOk"
    _ticket = "short"

    def __init__(self, ticket: int = 1) -> None:
        self.ticket = ticket


# Method index -> pamqp class, and pamqp name ("Connection.StartOk") -> index.
METHODS: Final[dict[int, type[base.Frame]]] = {
    **commands.INDEX_MAPPING,
    AccessRequest.index: AccessRequest,
    AccessRequestOk.index: AccessRequestOk,
}
METHOD_INDEX: Final[dict[str, int]] = {cls.name: index for index, cls in METHODS.items()}

# Per class: (slot, amqp type) in wire order, computed once.
_FIELDS: dict[type[base.Frame], tuple[tuple[str, str], ...]] = {
    cls: tuple((slot, cls.amqp_type(slot)) for slot in cls.__slots__) for cls in METHODS.values()
}
_EMPTY: Final[dict[str, Any]] = {"shortstr": "", "longstr": "", "table": {}}


def decode_method(payload: bytes) -> base.Frame:
    """The pamqp command for a method-frame payload (class/method ids first).

    Unknown method id: RabbitMQ's ``lookup_method_name/1`` exits ``{unknown_method_id, Id}`` and the reader
    dies without a close frame; we raise 503 COMMAND_INVALID so the session can close politely.
    """
    if len(payload) < 4:
        raise cannot_decode(0, payload)
    index = method_frame_id(payload)
    cls = METHODS.get(index)
    if cls is None:
        class_id, method_id = index >> 16, index & 0xFFFF
        raise HardError(
            ReplyCode.COMMAND_INVALID, f"unknown method id {{{class_id},{method_id}}}", class_id, method_id
        )
    method = cls.__new__(cls)
    try:
        end = _unmarshal(method, _FIELDS[cls], payload)
    except UnicodeDecodeError:
        raise malformed_utf8() from None
    except (FieldTableError, IndexError, struct.error):
        raise cannot_decode(index, payload) from None
    if end != len(payload):
        raise cannot_decode(index, payload)
    return method


def _unmarshal(method: base.Frame, fields: tuple[tuple[str, str], ...], data: bytes) -> int:
    """Set ``method``'s fields from ``data`` (after the 4 id bytes); return the offset after the last field.

    Bits pack 8 to an octet in field order, as pamqp's ``Frame.unmarshal`` and RabbitMQ's codegen do."""
    pos = 4
    bit = -1  # position of the next bit in the current bit octet; -1 when not inside a run of bits
    for name, kind in fields:
        value: Any
        if kind == "bit":
            if bit == 8:
                pos += 1
                bit = 0
            elif bit < 0:
                bit = 0
            value = ((data[pos] >> bit) & 1) == 1
            bit += 1
        else:
            if bit >= 0:
                pos += 1
                bit = -1
            if kind == "table":
                value, pos = decode_table_at(data, pos)
            else:
                value, pos = _SCALARS[kind](data, pos)
        setattr(method, name, value)
    if bit >= 0:
        pos += 1
    return pos


def _shortstr(data: bytes, pos: int) -> tuple[str, int]:
    end = pos + 1 + data[pos]
    if end > len(data):
        raise IndexError
    return data[pos + 1 : end].decode(), end


def _longstr(data: bytes, pos: int) -> tuple[str | bytes, int]:
    # pamqp hands a longstr back as str when it is UTF-8, else bytes (SASL responses may be binary).
    end = pos + 4 + _U32.unpack_from(data, pos)[0]
    if end > len(data):
        raise IndexError
    raw = data[pos + 4 : end]
    try:
        return raw.decode(), end
    except UnicodeDecodeError:
        return raw, end


def _fixed(codec: struct.Struct) -> Any:
    size = codec.size

    def decode(data: bytes, pos: int) -> tuple[int, int]:
        value: int = codec.unpack_from(data, pos)[0]
        return value, pos + size

    return decode


# Offsets into one buffer (pamqp slices the rest of the payload per field); tables go to protocol.field_table.
_SCALARS: Final[dict[str, Any]] = {
    "shortstr": _shortstr,
    "longstr": _longstr,
    "octet": _fixed(struct.Struct("!B")),
    "short": _fixed(struct.Struct("!H")),
    "long": _fixed(_U32),
    "longlong": _fixed(_U64),
    "timestamp": _fixed(_U64),
}


def encode_method(channel: int, method: base.Frame) -> bytes:
    """A whole method frame: frame header, class/method ids, fields, frame-end.

    ``None`` fields encode as empty/zero; ``longstr`` fields may be ``bytes`` (SASL challenge, mechanisms).
    """
    payload = _U32.pack(method.index) + _marshal(method)
    return _FRAME_HEADER.pack(1, channel, len(payload)) + payload + _END


def _marshal(method: base.Frame) -> bytes:
    cls = type(method)
    fields = _FIELDS.get(cls)
    if fields is None:
        fields = _FIELDS[cls] = tuple((slot, cls.amqp_type(slot)) for slot in cls.__slots__)
    out: list[bytes] = []
    octet = 0
    bit = -1
    for name, kind in fields:
        value = getattr(method, name, None)
        if kind == "bit":
            if bit == 8:
                out.append(bytes((octet,)))
                bit = -1
            if bit < 0:
                octet = bit = 0
            if value:
                octet |= 1 << bit
            bit += 1
            continue
        if bit >= 0:
            out.append(bytes((octet,)))
            bit = -1
        if value is None:
            value = _EMPTY.get(kind, 0)
        if kind == "longlong":
            out.append(_U64.pack(value))
        elif kind == "longstr" and isinstance(value, (bytes, bytearray)):
            out.append(_U32.pack(len(value)) + bytes(value))
        else:
            out.append(pamqp_encode.by_type(value, kind))
    if bit >= 0:
        out.append(bytes((octet,)))
    return b"".join(out)


def make_method(cls: type[F], **fields: Any) -> F:
    """Build a pamqp command without running its ``validate()`` (pamqp's name regexes reject names
    RabbitMQ accepts, e.g. ``Queue.DeclareOk(queue="ünïcode")`` raises). Missing fields take the
    constructor's defaults."""
    method = cls.__new__(cls)
    defaults = _defaults(cls)
    for name in cls.__slots__:
        setattr(method, name, fields.pop(name) if name in fields else defaults.get(name))
    if fields:
        raise TypeError(f"{cls.name} has no field(s) {sorted(fields)}")
    return method


_DEFAULTS: dict[type[base.Frame], dict[str, Any]] = {}


def _defaults(cls: type[base.Frame]) -> dict[str, Any]:
    defaults = _DEFAULTS.get(cls)
    if defaults is None:
        params = inspect.signature(cls.__init__).parameters.values()
        defaults = {p.name: p.default for p in params if p.default is not inspect.Parameter.empty}
        _DEFAULTS[cls] = defaults
    return defaults


def encode_heartbeat() -> bytes:
    """A heartbeat frame (type 8, channel 0, empty payload)."""
    return HEARTBEAT_FRAME


def encode_content(channel: int, header_payload: bytes, body: bytes, frame_max: int) -> list[bytes]:
    """The content-header frame then body frames of at most ``frame_max - 8`` payload bytes each.

    As ``rabbit_binary_generator:build_simple_content_frames/4``: an empty body sends the header frame
    alone, and frame_max 0 (no limit) sends the body in one frame.
    """
    pack = _FRAME_HEADER.pack
    frames = [b"".join((pack(2, channel, len(header_payload)), header_payload, _END))]
    size = len(body)
    if not size:
        return frames
    chunk = frame_max - 8 if frame_max else size
    if size <= chunk:
        frames.append(b"".join((pack(3, channel, size), body, _END)))
        return frames
    view = memoryview(body)
    for start in range(0, size, chunk):
        part = view[start : start + chunk]
        frames.append(b"".join((pack(3, channel, len(part)), part, _END)))
    return frames


def encode_delivery(
    method_frame: bytes, channel: int, header_payload: bytes, body: bytes, frame_max: int
) -> bytes:
    """``method_frame`` followed by its content frames as one bytes object: one write per delivery. A body
    that fits one frame (the common case) is joined directly; larger bodies go through `encode_content`."""
    size = len(body)
    if size and (not frame_max or size <= frame_max - 8):
        pack = _FRAME_HEADER.pack
        return b"".join(
            (
                method_frame,
                pack(2, channel, len(header_payload)),
                header_payload,
                _END,
                pack(3, channel, size),
                body,
                _END,
            )
        )
    return b"".join((method_frame, *encode_content(channel, header_payload, body, frame_max)))


_PROPERTY_FIELDS: Final = tuple(
    (name, commands.Basic.Properties.flags[name], getattr(commands.Basic.Properties, "_" + name))
    for name in commands.Basic.Properties.__slots__
)


def decode_properties(header_payload: bytes) -> commands.Basic.Properties:
    """All properties of a content-header payload as pamqp's ``Basic.Properties`` (not for the hot path).

    Decoded in one pass over the payload (pamqp's ``ContentHeader.unmarshal`` slices the rest of the payload
    per property and decodes headers in quadratic time); the values are the ones pamqp returns."""
    properties = commands.Basic.Properties()
    try:
        flags = 0
        word = 1
        shift = 0
        pos = 12
        while word & 1:  # property-flags words, the low bit announcing another word (as pamqp reads them)
            word = _U16.unpack_from(header_payload, pos)[0]
            flags |= (word & 0xFFFE) << shift
            shift += 16
            pos += 2
        for name, flag, kind in _PROPERTY_FIELDS:
            if not flags & flag:
                continue
            value: Any
            if kind == "table":
                value, pos = decode_table_at(header_payload, pos)
            elif kind == "timestamp":
                value = timestamp_value(_U64.unpack_from(header_payload, pos)[0], pos)
                pos += 8
            else:
                value, pos = _SCALARS[kind](header_payload, pos)
            setattr(properties, name, value)
    except (FieldTableError, IndexError, struct.error, UnicodeDecodeError):
        raise HardError(ReplyCode.FRAME_ERROR, "cannot decode content header properties", 60, 40) from None
    return properties


# RabbitMQ's names for the basic properties (AMQP's "type", which pamqp calls message_type), pamqp's name
# first, in the P_basic record's order: the order rabbit_trace and the management API list them in.
RABBIT_PROPERTY_NAMES: Final = tuple(
    (name, "type" if name == "message_type" else name) for name in commands.Basic.Properties.__slots__
)


def set_properties(header_payload: bytes) -> dict[str, Any]:
    """The properties a content header sets, by RabbitMQ's names, values as pamqp decodes them."""
    properties = decode_properties(header_payload)
    table: dict[str, Any] = {}
    for name, rabbit_name in RABBIT_PROPERTY_NAMES:
        value = getattr(properties, name, None)
        # pamqp reads an absent cluster_id as "": RabbitMQ lists only the properties that were set.
        if value is not None and not (name == "cluster_id" and value == ""):
            table[rabbit_name] = value
    return table


def encode_header_payload(body_size: int, properties: commands.Basic.Properties) -> bytes:
    """A content-header payload (class 60, weight 0) for a message the broker makes itself."""
    return _CONTENT_PREFIX.pack(60, 0, body_size) + properties.marshal()
