"""pamqp as the reference codec for the protocol tests: its own marshalling, with its name validation off."""

from __future__ import annotations

from typing import Any
from unittest import mock

from pamqp import base, commands, frame, header

SIGNED = 1 << 63


def as_signed(value: int) -> int:
    """pamqp packs ``longlong`` as signed 64-bit; the same bytes as RabbitMQ's unsigned value."""
    return value - (1 << 64) if value >= SIGNED else value


def build(cls: type[base.Frame], **fields: Any) -> base.Frame:
    """A pamqp command with exactly these fields, skipping ``__init__`` (which validates names)."""
    method = cls.__new__(cls)
    for name in cls.__slots__:
        setattr(method, name, fields[name])
    return method


def pamqp_frame(method: base.Frame, channel: int = 1) -> bytes:
    """pamqp's frame bytes for ``method`` (validate() switched off: its regexes reject valid AMQP names)."""
    with mock.patch.object(type(method), "validate", return_value=None):
        return frame.marshal(method, channel)


def payload_of(frame_bytes: bytes) -> bytes:
    """The payload of one whole frame."""
    return frame_bytes[7:-1]


def pamqp_decode_method(payload: bytes) -> base.Frame:
    """pamqp's decoding of a method payload."""
    raw = b"\x01\x00\x01" + len(payload).to_bytes(4, "big") + payload + b"\xce"
    _, _, decoded = frame.unmarshal(raw)
    assert isinstance(decoded, base.Frame)
    return decoded


def header_payload(body_size: int, properties: commands.Basic.Properties) -> bytes:
    """pamqp's content-header payload."""
    return header.ContentHeader(0, body_size, properties).marshal()


def pamqp_properties(payload: bytes) -> header.ContentHeader:
    """pamqp's decoding of a content-header payload."""
    decoded = header.ContentHeader()
    decoded.unmarshal(payload)
    return decoded
