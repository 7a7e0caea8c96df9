"""Split an AMQP 0-9-1 byte stream into ``(type, channel, payload)`` frames with RabbitMQ's frame checks.

Mirrors ``rabbit_reader:handle_input/3`` (deps/rabbit/src/rabbit_reader.erl): the 7-byte frame header is
checked against the negotiated frame_max before any of the payload is buffered, then the frame-end octet,
then the frame type and minimum payload (``rabbit_command_assembler:analyze_frame/2``). Sans-I/O.
"""

from __future__ import annotations

import struct
from typing import Any, Final

from protocol.compiled import native_wire
from protocol.erlang_terms import binary_tp, payload_snippet
from protocol.errors import FrameError, HardError, ProtocolHeaderError, ReplyCode
from protocol.fastpath import BASIC_ACK, BASIC_PUBLISH

FRAME_METHOD: Final = 1
FRAME_HEADER: Final = 2
FRAME_BODY: Final = 3
FRAME_HEARTBEAT: Final = 8
FRAME_END: Final = 0xCE
# Not a wire type: the item of a basic.publish whose method, header and body frames came in one read, as the
# native scanner returns it: (FRAME_PUBLISH, channel, (method payload, header payload, body)).
FRAME_PUBLISH: Final = 0
# Nor these: a basic.ack the native scanner decoded, (FRAME_ACK or FRAME_ACK_MULTIPLE, channel, delivery_tag).
FRAME_ACK: Final = -1
FRAME_ACK_MULTIPLE: Final = -2
FRAME_MIN_SIZE: Final = 4096
FRAME_HEADER_SIZE: Final = 7
# ?EMPTY_FRAME_SIZE in rabbit_framing.hrl: header (7) + frame-end (1).
EMPTY_FRAME_SIZE: Final = 8
PROTOCOL_HEADER: Final = b"AMQP\x00\x00\x09\x01"
# rabbit_reader:version_negotiation/2 accepts 0-9-1 and treats the 0-9 header {1,1,0,9} as 0-9-1.
_ACCEPTED_HEADERS: Final = frozenset({PROTOCOL_HEADER, b"AMQP\x01\x01\x00\x09"})

Frame = tuple[int, int, bytes]
# What feed returns: Frames, and with the native scanner FRAME_PUBLISH and FRAME_ACK(_MULTIPLE) items too.
Item = tuple[int, int, Any]

_WIRE = native_wire()

_FRAME_HEADER = struct.Struct("!BHI")
_METHOD_ID = struct.Struct("!I")
_ACK_PAYLOAD = struct.Struct("!IQB")  # basic.ack's class/method ids, delivery-tag, bits (fastpath's layout)
_NO_LIMIT = 0xFFFFFFFF

# analyze_frame/2: a method payload holds at least class+method ids, a content header at least class,
# weight and body size; a heartbeat is exactly empty (checked apart); other types are ``error``.
_MIN_PAYLOAD: Final = [1 << 40] * 256
_MIN_PAYLOAD[FRAME_METHOD] = 4
_MIN_PAYLOAD[FRAME_HEADER] = 12
_MIN_PAYLOAD[FRAME_BODY] = 0
_MIN_PAYLOAD[FRAME_HEARTBEAT] = 0


def method_payload(frame_type: int, payload: Any) -> tuple[int, bytes]:
    """The wire frame type and payload of an item's (first) frame: a FRAME_PUBLISH item's method frame, a
    FRAME_ACK item's basic.ack; a plain frame as it is."""
    if frame_type == FRAME_PUBLISH:
        return FRAME_METHOD, payload[0]
    if frame_type in (FRAME_ACK, FRAME_ACK_MULTIPLE):
        return FRAME_METHOD, _ACK_PAYLOAD.pack(BASIC_ACK, payload, frame_type == FRAME_ACK_MULTIPLE)
    return frame_type, payload


def failing_method(frame_type: int, payload: Any) -> tuple[int, int]:
    """(class id, method id) of the method an item belongs to, for the close of an error it caused: content
    frames complete a basic.publish (60/40), a FRAME_ACK item is a basic.ack (60/80), a method frame names
    itself. RabbitMQ's channel names the method it was handling when it fails, never 0/0 (a strict client
    routes a channel.close by those ids)."""
    if frame_type in (FRAME_PUBLISH, FRAME_HEADER, FRAME_BODY):
        index = BASIC_PUBLISH
    elif frame_type in (FRAME_ACK, FRAME_ACK_MULTIPLE):
        index = BASIC_ACK
    elif frame_type == FRAME_METHOD and len(payload) >= 4:
        index = _METHOD_ID.unpack_from(payload)[0]
    else:
        return 0, 0
    return index >> 16, index & 0xFFFF


def ungrouped(items: list[Item]) -> list[Frame]:
    """The frames ``items`` stand for: each FRAME_PUBLISH item as its method, header and body frames (no body
    frame for an empty body), each FRAME_ACK item as its frame, as the pure scanner returns them."""
    frames: list[Frame] = []
    for frame_type, channel, payload in items:
        if frame_type != FRAME_PUBLISH:
            wire_type, wire_payload = method_payload(frame_type, payload)
            frames.append((wire_type, channel, wire_payload))
            continue
        method, header, body = payload
        frames += ((FRAME_METHOD, channel, method), (FRAME_HEADER, channel, header))
        if body:
            frames.append((FRAME_BODY, channel, body))
    return frames


class FrameSyncError(FrameError):
    """A 501 after which the stream cannot resynchronise ("we've lost sync with the client", rabbit_reader).

    ``frames`` holds the complete frames that preceded the bad one in the same ``feed`` call: RabbitMQ handles
    those before it fails, so a session that wants that fidelity dispatches them before closing.
    """

    def __init__(self, text: str, frames: list[Item] | None = None) -> None:
        super().__init__(text)
        self.frames: list[Item] = frames if frames is not None else []


def frame_error(
    frame_type: int, payload: bytes, error: str, frames: list[Item] | None = None
) -> FrameSyncError:
    """rabbit_reader:frame_error/5, e.g. ``type 1, all octets = <<...>>: {invalid_frame_end_marker,0}``."""
    which, snippet = payload_snippet(payload)
    return FrameSyncError(f"type {frame_type}, {which} octets = {binary_tp(snippet)}: {error}", frames)


def unexpected_frame(frame_type: int, payload: bytes) -> HardError:
    """rabbit_reader:unexpected_frame/4 (505): a heartbeat on a channel other than 0, a content frame on
    channel 0, or any frame on a channel before the connection is open: ``type 8, all octets = <<>>``."""
    which, snippet = payload_snippet(payload)
    return HardError(ReplyCode.UNEXPECTED_FRAME, f"type {frame_type}, {which} octets = {binary_tp(snippet)}")


def _describe_bad_header(header: bytes) -> str:
    # The reasons rabbit_reader logs for handle_input(handshake, ...) and version_negotiation/2.
    if header.startswith(b"GET "):
        return "bad_header detected_http_get"
    if header[0] == 0x16 and header[1] == 0x03 and header[5] == 0x01:
        return "bad_header detected_tls"
    if header.startswith(b"AMQP"):
        return "bad_version {" + ",".join(str(b) for b in header[4:]) + "}"
    return f"bad_header {header!r}"


# Reads shorter than this are joined to a buffered partial frame; longer ones are parsed where they lie. Fed
# 1 KiB publishes in 4 KiB reads, parsing apart costs 0.72 us a publish against 0.65 joined; in 64 KiB reads
# both cost about 0.26 us; in 256 KiB reads 0.25 against 0.86.
JOIN_BELOW = 32 * 1024


class FrameBuffer:
    """Accumulates received bytes and returns every complete frame; partial frames stay buffered.

    ``max_frame_size`` is the negotiated frame_max (pre-auth: 4096, RabbitMQ's initial_frame_max); 0 means no
    limit, as in RabbitMQ. The session raises it after tune-ok.
    """

    __slots__ = ("_buf", "_header_pending", "_need", "_scan", "join_below", "max_frame_size")

    def __init__(
        self,
        max_frame_size: int,
        expect_protocol_header: bool = True,
        native: bool = False,
        join_below: int = JOIN_BELOW,
    ) -> None:
        self.max_frame_size = max_frame_size
        self.join_below = join_below  # tests set it to take either path on any read
        # ``native``: the broker's side of a connection (ConnectionSession) lets protocol._wire.scan take the
        # well-formed frames, a publish's three as one item and basic.ack decoded; the loop below the rest.
        # Off by default: a client reading the broker's frames (confirms are basic.ack too) wants plain ones.
        self._scan = _WIRE.scan if native and _WIRE is not None else None
        self._buf = bytearray()
        self._header_pending = expect_protocol_header
        # Bytes the buffer must hold before parsing can make progress: a whole protocol header, frame header
        # or frame. Partial frames are only appended to, so a large frame arriving in pieces costs O(size).
        self._need = len(PROTOCOL_HEADER) if expect_protocol_header else FRAME_HEADER_SIZE

    @property
    def buffered_bytes(self) -> int:
        """Bytes received but not yet returned as frames (for the per-connection buffer limit)."""
        return len(self._buf)

    def feed(self, data: bytes) -> list[Item]:
        """Append ``data``; return the complete frames in order as ``(frame_type, channel, payload)``; with
        the native scanner, a publish's frames that arrived together as one ``FRAME_PUBLISH`` item.

        Raises ``ProtocolHeaderError`` for a bad protocol header (answer ``PROTOCOL_HEADER`` and close) and
        ``FrameSyncError`` (a ``FrameError``, 501) for an oversized frame, bad frame-end or unknown frame.
        """
        if data.__class__ is not bytes:  # a bytearray/memoryview would leak into the payloads
            data = bytes(data)
        buf = self._buf
        if buf and (self._header_pending or len(data) < self.join_below):
            # A short read: joining costs less than parsing the buffered frame apart (below). And a header in
            # pieces: its octets stay together, as ProtocolHeaderError hands them all to another protocol
            # (AMQP 1.0) along with the frames sent right behind the header.
            if len(buf) + len(data) < self._need:
                buf += data
                return []
            data = bytes(buf) + data
            buf.clear()
        if not buf:
            if len(data) < self._need:
                buf += data
                return []
            return self._parse(data, 0, [])
        # A long read behind a partial frame: complete that frame from the head of ``data``, parse it alone,
        # then parse the rest of ``data`` where it lies. Joining the buffer and the whole read copied every
        # received byte twice more, and uvloop reads up to 256 KiB at a time (0.85 against 0.25 us per 1 KiB
        # publish fed in 256 KiB reads; py-spy --gil put the joins at a fifth of the loop thread's time in
        # perf/ab.py's persistent confirms).
        frames: list[Item] = []
        pos = 0
        n = len(data)
        while buf:
            missing = self._need - len(buf)
            if n - pos < missing:
                buf += memoryview(data)[pos:]
                return frames
            buf += memoryview(data)[pos : pos + missing]
            pos += missing
            head = bytes(buf)
            buf.clear()
            frames = self._parse(head, 0, frames)
        return self._parse(data, pos, frames) if pos < n else frames

    def _parse(self, data: bytes, pos: int, frames: list[Item]) -> list[Item]:
        """The complete frames of ``data`` from ``pos``, after ``frames`` (those of this read so far, which
        an error carries); what is left of a partial frame stays in the buffer."""
        buf = self._buf
        if self._header_pending:  # only ever at the start of a read (feed joins a header's pieces)
            pos = self._accept_protocol_header(data)
        limit = self.max_frame_size or _NO_LIMIT
        if self._scan is not None:
            scanned, pos = self._scan(data, pos, limit)
            if frames:
                frames += scanned
            else:
                frames = scanned
        append = frames.append
        unpack = _FRAME_HEADER.unpack_from
        min_payload = _MIN_PAYLOAD
        n = len(data)
        need = FRAME_HEADER_SIZE
        while n - pos >= FRAME_HEADER_SIZE:
            frame_type, channel, size = unpack(data, pos)
            if size > limit:
                raise self._too_large(frame_type, size, frames)
            start = pos + FRAME_HEADER_SIZE
            end = start + size
            if end >= n:
                need = end + 1 - pos
                break
            if data[end] != FRAME_END:
                raise frame_error(
                    frame_type, data[start:end], f"{{invalid_frame_end_marker,{data[end]}}}", frames
                )
            if size < min_payload[frame_type] or (frame_type == FRAME_HEARTBEAT and size):
                raise frame_error(frame_type, data[start:end], "unknown_frame", frames)
            append((frame_type, channel, data[start:end]))
            pos = end + 1
        if pos < n:
            buf += memoryview(data)[pos:]
        self._need = need
        return frames

    def _accept_protocol_header(self, data: bytes) -> int:
        header = data[: len(PROTOCOL_HEADER)]
        if header not in _ACCEPTED_HEADERS:
            # The octets received so far go with the error: the edge hands an AMQP 1.0 header to that
            # protocol's connection instead of refusing it.
            raise ProtocolHeaderError(_describe_bad_header(header), data)
        self._header_pending = False
        return len(PROTOCOL_HEADER)

    def _too_large(self, frame_type: int, size: int, frames: list[Item]) -> FrameSyncError:
        # handle_input(frame_header, ...) when PayloadSize > FrameMax - ?EMPTY_FRAME_SIZE + ?FRAME_SIZE_FUDGE:
        # the fudge (8) tolerates clients off by one frame overhead, so a payload may equal frame_max.
        # The error reports the payload limit (FrameMax - 8) and an empty snippet: the payload is never read.
        return frame_error(
            frame_type,
            b"",
            f"{{frame_too_large,{size},{self.max_frame_size - EMPTY_FRAME_SIZE}}}",
            frames,
        )
