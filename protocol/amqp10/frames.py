"""AMQP 1.0 protocol headers and frames (part 2, 2.2 and 2.3), and an incremental frame scanner. Sans-I/O.

A frame is SIZE (4 octets, the whole frame), DOFF (1, the header's length in 4-octet words, at least 2), TYPE
(0 AMQP, 1 SASL), a 2-octet type-specific field (the channel), the extended header (DOFF * 4 - 8 octets,
ignored by every peer so far) and the body. An AMQP frame with no body is a heartbeat (2.4.5).

The scanner checks a frame's header as rabbit_amqp_reader's handle_input({frame_header, Mode}) does, with its
error texts, before buffering any of the body: size at least 8, at most the negotiated max-frame-size (512,
MIN-MAX-FRAME-SIZE, until open has set it), DOFF at least 2 and within the frame, the type the mode expects.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Final

from protocol.amqp10.errors import FramingError, ProtocolHeaderMismatch

AMQP_HEADER: Final = b"AMQP\x00\x01\x00\x00"
SASL_HEADER: Final = b"AMQP\x03\x01\x00\x00"
HEADER_SIZE: Final = 8
TYPE_AMQP: Final = 0
TYPE_SASL: Final = 1
# Part 2, 2.7.1: a peer must accept frames of this size; until open is exchanged neither sends larger ones.
MIN_MAX_FRAME_SIZE: Final = 512
FRAME_HEADER_SIZE: Final = 8
# The protocol IDs of AMQP 1.0's header "AMQP" ID 1 0 0 (part 2, 2.2): 0 AMQP, 2 TLS, 3 SASL; RabbitMQ 4 reads
# 1 as well, and refuses every one but 3 ("RabbitMQ requires SASL security layer").
AMQP10_PROTOCOL_IDS: Final = frozenset({0, 1, 2, 3})
_MODE_NAMES: Final = {TYPE_AMQP: "amqp", TYPE_SASL: "sasl"}
_HEADER_TYPES: Final = {AMQP_HEADER: TYPE_AMQP, SASL_HEADER: TYPE_SASL}

_FRAME_HEADER = struct.Struct(">IBBH")


def is_amqp10_header(data: bytes) -> bool:
    """``data`` starts with an AMQP 1.0 protocol header (any protocol ID), as rabbit_reader's handshake tells
    AMQP 1.0 (version 1.0.0) from 0-9-1 and 0-8 (whose fifth octet is 0 or 1 as well, hence the version)."""
    return (
        len(data) >= HEADER_SIZE
        and data[:4] == b"AMQP"
        and data[4] in AMQP10_PROTOCOL_IDS
        and data[5:8] == b"\x01\x00\x00"
    )


@dataclass(frozen=True, slots=True)
class ProtocolHeader:
    """The 8 octets that open the connection (or the AMQP layer after SASL): AMQP_HEADER or SASL_HEADER."""

    header: bytes

    @property
    def is_sasl(self) -> bool:
        return self.header == SASL_HEADER


@dataclass(frozen=True, slots=True)
class Frame:
    """One frame: ``body`` is the performative (and a transfer's payload after it); empty for a heartbeat."""

    frame_type: int
    channel: int
    body: bytes
    extended_header: bytes = b""

    @property
    def is_heartbeat(self) -> bool:
        return not self.body


def encode_frame(
    body: bytes, channel: int = 0, frame_type: int = TYPE_AMQP, extended_header: bytes = b""
) -> bytes:
    """A whole frame around ``body``; ``extended_header`` must be a multiple of 4 octets."""
    if len(extended_header) % 4:
        raise ValueError("the extended header is a whole number of 4-octet words")
    doff = (FRAME_HEADER_SIZE + len(extended_header)) // 4
    size = FRAME_HEADER_SIZE + len(extended_header) + len(body)
    return _FRAME_HEADER.pack(size, doff, frame_type, channel) + extended_header + body


HEARTBEAT: Final = encode_frame(b"")


class FrameScanner:
    """Accumulates received octets and returns every complete frame and protocol header, in order.

    ``expect_header``: the stream starts with a protocol header (``ProtocolHeaderMismatch`` if it is not one
    of ``accepted_headers``). An accepted header sets the mode: SASL frames after the SASL header, AMQP
    frames after the AMQP one; a frame of the other type is a framing error. In SASL mode a frame boundary
    that starts with ``AMQP`` is the AMQP header the client sends once SASL is done (a SASL frame of that size
    would be over the limit anyway), so a client that pipelines it after sasl-init is read in order.
    ``frame_type`` sets the mode for a scanner that starts after the header; None accepts both types.
    """

    __slots__ = ("_buf", "_header_pending", "accepted_headers", "frame_type", "max_frame_size")

    def __init__(
        self,
        max_frame_size: int = MIN_MAX_FRAME_SIZE,
        expect_header: bool = True,
        accepted_headers: frozenset[bytes] = frozenset(_HEADER_TYPES),
        frame_type: int | None = None,
    ) -> None:
        self.max_frame_size = max_frame_size
        self.accepted_headers = accepted_headers
        self.frame_type = frame_type
        self._header_pending = expect_header
        self._buf = bytearray()

    @property
    def buffered_bytes(self) -> int:
        """Octets received but not yet returned (for a per-connection buffer limit)."""
        return len(self._buf)

    def expect_protocol_header(self) -> None:
        """The next octets are a protocol header (after a SASL outcome, part 5, 5.3.2)."""
        self._header_pending = True

    def feed(self, data: bytes) -> list[Frame | ProtocolHeader]:
        """Append ``data``; return the complete frames and headers (``max_frame_size`` 0: no limit).

        Raises ``FramingError`` (the stream cannot be resynchronised: close with
        amqp:connection:framing-error) or ``ProtocolHeaderMismatch``."""
        buf = self._buf
        buf += data
        items: list[Frame | ProtocolHeader] = []
        pos = 0
        n = len(buf)
        try:
            while True:
                if self._header_pending or (self.frame_type == TYPE_SASL and buf[pos : pos + 4] == b"AMQP"):
                    if n - pos < HEADER_SIZE:
                        break
                    items.append(self._header(bytes(buf[pos : pos + HEADER_SIZE])))
                    pos += HEADER_SIZE
                    continue
                if n - pos < FRAME_HEADER_SIZE:
                    break
                size, doff, frame_type, channel = _FRAME_HEADER.unpack_from(buf, pos)
                self._check(size, doff, frame_type, channel)
                if n - pos < size:
                    break
                start = pos + doff * 4
                items.append(
                    Frame(frame_type, channel, bytes(buf[start : pos + size]), bytes(buf[pos + 8 : start]))
                )
                pos += size
        except (FramingError, ProtocolHeaderMismatch) as error:
            error.frames = items
            raise
        finally:
            del buf[:pos]
        return items

    def _header(self, header: bytes) -> ProtocolHeader:
        if header not in self.accepted_headers:
            raise ProtocolHeaderMismatch(header)
        self._header_pending = False
        self.frame_type = _HEADER_TYPES.get(header, self.frame_type)
        return ProtocolHeader(header)

    def _check(self, size: int, doff: int, frame_type: int, channel: int) -> None:
        # rabbit_amqp_reader:handle_input(<<Size:32, DOff:8, Type:8, Channel:16>>, {frame_header, Mode}).
        if size < FRAME_HEADER_SIZE:
            raise FramingError(f"frame size ({size} bytes) < minimum frame size (8 bytes)")
        if self.max_frame_size and size > self.max_frame_size:
            raise FramingError(
                f"frame size ({size} bytes) > maximum frame size ({self.max_frame_size} bytes)"
            )
        if doff < 2:
            raise FramingError(f"data offset ({doff}) < minimum data offset (2)")
        if doff * 4 > size:
            raise FramingError(f"data offset ({doff * 4} bytes) > frame size ({size} bytes)")
        expected = self.frame_type
        if expected is None:
            if frame_type not in _MODE_NAMES:
                raise FramingError(f"unexpected frame type {frame_type}")
        elif frame_type != expected:
            raise FramingError(
                f"unexpected frame type {frame_type} in {_MODE_NAMES[expected]} mode (expected {expected})"
            )
