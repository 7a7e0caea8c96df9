"""The transport performatives (part 2, 2.7): the bodies of AMQP frames, with a transfer's payload after it.

Field names are the spec's with ``_`` for ``-``; an optional field left None is omitted on the wire and means
the spec's default (e.g. open's max-frame-size 4294967295). ``decode_performative`` reads a frame body.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from protocol.amqp10.composite import CompositeType, amqp, composite, decode_composite
from protocol.amqp10.condition import Error
from protocol.amqp10.delivery_states import DeliveryState
from protocol.amqp10.encode import encode
from protocol.amqp10.errors import DecodeError
from protocol.amqp10.terminus import Source, Target
from protocol.amqp10.types import Described, Symbol

# Link roles (part 2, 2.8.1) and settlement modes (2.8.2, 2.8.3).
ROLE_SENDER: Final = False
ROLE_RECEIVER: Final = True
SND_UNSETTLED: Final = 0
SND_SETTLED: Final = 1
SND_MIXED: Final = 2
RCV_FIRST: Final = 0
RCV_SECOND: Final = 1


@composite(0x10, "amqp:open:list")
@dataclass(frozen=True, slots=True, kw_only=True)
class Open(CompositeType):
    container_id: str = amqp("string")
    hostname: str | None = amqp("string", None)
    max_frame_size: int | None = amqp("uint", None)
    channel_max: int | None = amqp("ushort", None)
    idle_time_out: int | None = amqp("uint", None)  # milliseconds
    outgoing_locales: tuple[Symbol, ...] | None = amqp("symbols", None)
    incoming_locales: tuple[Symbol, ...] | None = amqp("symbols", None)
    offered_capabilities: tuple[Symbol, ...] | None = amqp("symbols", None)
    desired_capabilities: tuple[Symbol, ...] | None = amqp("symbols", None)
    properties: dict[Any, Any] | None = amqp("map", None)


@composite(0x11, "amqp:begin:list")
@dataclass(frozen=True, slots=True, kw_only=True)
class Begin(CompositeType):
    remote_channel: int | None = amqp("ushort", None)
    next_outgoing_id: int = amqp("uint")
    incoming_window: int = amqp("uint")
    outgoing_window: int = amqp("uint")
    handle_max: int | None = amqp("uint", None)
    offered_capabilities: tuple[Symbol, ...] | None = amqp("symbols", None)
    desired_capabilities: tuple[Symbol, ...] | None = amqp("symbols", None)
    properties: dict[Any, Any] | None = amqp("map", None)


@composite(0x12, "amqp:attach:list")
@dataclass(frozen=True, slots=True, kw_only=True)
class Attach(CompositeType):
    name: str = amqp("string")
    handle: int = amqp("uint")
    role: bool = amqp("boolean")
    snd_settle_mode: int | None = amqp("ubyte", None)
    rcv_settle_mode: int | None = amqp("ubyte", None)
    source: Source | Described | None = amqp("composite", None)
    target: Target | Described | None = amqp("composite", None)
    unsettled: dict[Any, Any] | None = amqp("map", None)
    incomplete_unsettled: bool | None = amqp("boolean", None)
    initial_delivery_count: int | None = amqp("uint", None)
    max_message_size: int | None = amqp("ulong", None)
    offered_capabilities: tuple[Symbol, ...] | None = amqp("symbols", None)
    desired_capabilities: tuple[Symbol, ...] | None = amqp("symbols", None)
    properties: dict[Any, Any] | None = amqp("map", None)


@composite(0x13, "amqp:flow:list")
@dataclass(frozen=True, slots=True, kw_only=True)
class Flow(CompositeType):
    next_incoming_id: int | None = amqp("uint", None)
    incoming_window: int = amqp("uint")
    next_outgoing_id: int = amqp("uint")
    outgoing_window: int = amqp("uint")
    handle: int | None = amqp("uint", None)
    delivery_count: int | None = amqp("uint", None)
    link_credit: int | None = amqp("uint", None)
    available: int | None = amqp("uint", None)
    drain: bool | None = amqp("boolean", None)
    echo: bool | None = amqp("boolean", None)
    properties: dict[Any, Any] | None = amqp("map", None)


@composite(0x14, "amqp:transfer:list")
@dataclass(frozen=True, slots=True, kw_only=True)
class Transfer(CompositeType):
    handle: int = amqp("uint")
    delivery_id: int | None = amqp("uint", None)
    delivery_tag: bytes | None = amqp("binary", None)
    message_format: int | None = amqp("uint", None)
    settled: bool | None = amqp("boolean", None)
    more: bool | None = amqp("boolean", None)
    rcv_settle_mode: int | None = amqp("ubyte", None)
    state: DeliveryState | None = amqp("composite", None)
    resume: bool | None = amqp("boolean", None)
    aborted: bool | None = amqp("boolean", None)
    batchable: bool | None = amqp("boolean", None)


@composite(0x15, "amqp:disposition:list")
@dataclass(frozen=True, slots=True, kw_only=True)
class Disposition(CompositeType):
    role: bool = amqp("boolean")
    first: int = amqp("uint")
    last: int | None = amqp("uint", None)
    settled: bool | None = amqp("boolean", None)
    state: DeliveryState | None = amqp("composite", None)
    batchable: bool | None = amqp("boolean", None)


@composite(0x16, "amqp:detach:list")
@dataclass(frozen=True, slots=True, kw_only=True)
class Detach(CompositeType):
    handle: int = amqp("uint")
    closed: bool | None = amqp("boolean", None)
    error: Error | Described | None = amqp("composite", None)


@composite(0x17, "amqp:end:list")
@dataclass(frozen=True, slots=True, kw_only=True)
class End(CompositeType):
    error: Error | Described | None = amqp("composite", None)


@composite(0x18, "amqp:close:list")
@dataclass(frozen=True, slots=True, kw_only=True)
class Close(CompositeType):
    error: Error | Described | None = amqp("composite", None)


Performative = Open | Begin | Attach | Flow | Transfer | Disposition | Detach | End | Close
_PERFORMATIVES: Final = (Open, Begin, Attach, Flow, Transfer, Disposition, Detach, End, Close)


def decode_performative(body: bytes) -> tuple[Performative, bytes]:
    """The performative at the start of an AMQP frame body and the payload after it (a transfer's message
    octets; empty for every other performative). Anything else there is ``amqp:decode-error``."""
    performative, end = decode_composite(body)
    if not isinstance(performative, _PERFORMATIVES):
        raise DecodeError(f"frame body is not a performative: {performative!r}")
    return performative, body[end:]


def encode_performative(performative: Performative, payload: bytes = b"") -> bytes:
    """A frame body: the performative, then ``payload`` (a transfer's message octets)."""
    return encode(performative) + payload
