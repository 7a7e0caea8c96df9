"""AMQP 1.0 frames as a strict peer reads them: a byte stream split into protocol headers and frames, each
frame decoded into a plain record that keeps everything on the wire.

Every value keeps its format code (part 1, 1.6: ``52`` smalluint is not ``70`` uint, ``a1`` str8 is not
``b1`` str32), described values keep their descriptor, lists and maps keep their order, and a transfer's
payload is read as its message sections. Like wire.py for AMQP 0-9-1, this decoder is the harness's own,
written from the AMQP 1.0 specification, not the broker's codec (protocol/amqp10): it is the judge, so it must
not share the code it judges. It raises nothing on odd input; what it cannot read it keeps as hex.
"""

from __future__ import annotations

import struct
from typing import Any

from .wire import Frame, Reader, Short

PROTOCOL_HEADER_PREFIX = b"AMQP"
# Frame kinds in the recording (wire.Frame.kind): 0 a protocol header, 10 an AMQP frame, 11 a SASL frame,
# -1 bytes that are not a frame. Distinct from AMQP 0-9-1's 1/2/3/8 so that the two never mix.
AMQP_FRAME, SASL_FRAME = 10, 11

# Part 2, 2.7 and part 5, 5.3.3: the performatives' and SASL frames' descriptor codes.
PERFORMATIVES = {
    0x10: "open",
    0x11: "begin",
    0x12: "attach",
    0x13: "flow",
    0x14: "transfer",
    0x15: "disposition",
    0x16: "detach",
    0x17: "end",
    0x18: "close",
    0x40: "sasl-mechanisms",
    0x41: "sasl-init",
    0x42: "sasl-challenge",
    0x43: "sasl-response",
    0x44: "sasl-outcome",
}
# Part 3, 3.2: message sections.
SECTIONS = {
    0x70: "header",
    0x71: "delivery-annotations",
    0x72: "message-annotations",
    0x73: "properties",
    0x74: "application-properties",
    0x75: "data",
    0x76: "amqp-sequence",
    0x77: "amqp-value",
    0x78: "footer",
}

# Fixed-width format codes (part 1, 1.6): struct format, or None for the zero-width ones.
_FIXED: dict[int, str | None] = {
    0x40: None,  # null
    0x41: None,  # true
    0x42: None,  # false
    0x43: None,  # uint0
    0x44: None,  # ulong0
    0x45: None,  # list0
    0x50: "!B",  # ubyte
    0x51: "!b",  # byte
    0x52: "!B",  # smalluint
    0x53: "!B",  # smallulong
    0x54: "!b",  # smallint
    0x55: "!b",  # smalllong
    0x56: "!B",  # boolean
    0x60: "!H",  # ushort
    0x61: "!h",  # short
    0x70: "!I",  # uint
    0x71: "!i",  # int
    0x72: "!f",  # float
    0x73: "!I",  # char
    0x80: "!Q",  # ulong
    0x81: "!q",  # long
    0x82: "!d",  # double
    0x83: "!q",  # timestamp
}
_ZERO_VALUES: dict[int, Any] = {0x40: None, 0x41: True, 0x42: False, 0x43: 0, 0x44: 0, 0x45: []}
_BYTES = {0x74: 4, 0x84: 8, 0x94: 16, 0x98: 16}  # decimal32/64/128, uuid: kept as hex
_VARIABLE = {0xA0: 1, 0xA1: 1, 0xA3: 1, 0xB0: 4, 0xB1: 4, 0xB3: 4}  # vbin, str, sym: size width
_COMPOUND = {0xC0: 1, 0xC1: 1, 0xD0: 4, 0xD1: 4}  # list8, map8, list32, map32
_ARRAY = {0xE0: 1, 0xF0: 4}


def _size(reader: Reader, width: int) -> int:
    return int(reader.unpack("!B" if width == 1 else "!I"))


def _element(reader: Reader, code: int) -> Any:
    """A value of format ``code`` (its constructor already read): a compact form of what is on the wire."""
    if code in _ZERO_VALUES:
        return _ZERO_VALUES[code]
    fmt = _FIXED.get(code)
    if fmt is not None:
        number = reader.unpack(fmt)
        return bool(number) if code == 0x56 else number
    if code in _BYTES:
        return reader.take(_BYTES[code]).hex()
    if code in _VARIABLE:
        raw = reader.take(_size(reader, _VARIABLE[code]))
        if code in (0xA0, 0xB0):
            return raw.hex()
        return raw.decode("utf-8", "replace")
    if code in _COMPOUND:
        width = _COMPOUND[code]
        size = _size(reader, width)
        body = Reader(reader.take(size))
        count = _size(body, width)
        items = [value(body) for _ in range(count)]
        if code in (0xC1, 0xD1):
            return {"map": [items[i : i + 2] for i in range(0, len(items), 2)]}
        return items
    if code in _ARRAY:
        width = _ARRAY[code]
        size = _size(reader, width)
        body = Reader(reader.take(size))
        count = _size(body, width)
        element = _constructor(body)
        return {"array": element[0], "items": [_element(body, element[1]) for _ in range(count)]}
    raise Short  # an unknown format code: nothing after it can be read


def _constructor(reader: Reader) -> tuple[Any, int]:
    """(how the constructor reads, its format code): a described constructor reads as its descriptor."""
    code = reader.unpack("!B")
    if code == 0x00:
        descriptor = value(reader)
        return ({"described": descriptor, "code": f"{reader.data[reader.pos]:02x}"}, reader.unpack("!B"))
    return (f"{code:02x}", code)


def value(reader: Reader) -> Any:
    """One value with its format code: ``["52", 5]``, or ``{"descriptor": ..., "value": ...}``."""
    code = reader.unpack("!B")
    if code == 0x00:
        descriptor = value(reader)
        return {"descriptor": descriptor, "value": value(reader)}
    return [f"{code:02x}", _element(reader, code)]


def descriptor_code(described: Any) -> int | None:
    """The numeric descriptor of a decoded described value (``["53", 0x10]``), None for a symbolic one."""
    if isinstance(described, dict) and isinstance(described.get("descriptor"), list):
        code = described["descriptor"][1]
        return code if isinstance(code, int) else None
    return None


def decode_frame(frame: Frame) -> dict[str, Any]:
    """A frame as a record: a protocol header's bytes; an empty frame as a heartbeat; a performative's name
    and fields; a transfer's payload as its message sections."""
    if frame.kind == 0:
        return {"kind": "protocol-header", "bytes": frame.payload.hex()}
    if frame.kind not in (AMQP_FRAME, SASL_FRAME):
        return {"kind": "garbage", "bytes": frame.payload.hex()}
    if not frame.payload:
        return {"kind": "heartbeat", "ch": frame.channel}
    reader = Reader(frame.payload)
    record: dict[str, Any] = {"kind": "sasl" if frame.kind == SASL_FRAME else "amqp", "ch": frame.channel}
    try:
        performative = value(reader)
    except Short:
        return {**record, "undecodable": frame.payload.hex()}
    code = descriptor_code(performative)
    record["performative"] = PERFORMATIVES.get(code, f"{code}") if code is not None else performative
    record["fields"] = performative["value"] if isinstance(performative, dict) else performative
    if reader.left:
        record["payload"] = payload_sections(reader)
    return record


def payload_sections(reader: Reader) -> list[Any]:
    """A transfer's payload read as message sections; what does not read as one is kept as hex (a message
    split across transfers is read per frame)."""
    sections: list[Any] = []
    while reader.left:
        start = reader.pos
        try:
            section = value(reader)
        except Short:
            sections.append({"rest": reader.data[start:].hex()})
            break
        code = descriptor_code(section)
        if code in SECTIONS and isinstance(section, dict):
            sections.append({SECTIONS[code]: section["value"]})
        else:
            sections.append(section)
    return sections


class Amqp10Splitter:
    """Cuts one direction of an AMQP 1.0 connection into protocol headers and frames (part 2, 2.3): a
    protocol header may come at the start and again after SASL; bytes that cannot be framed end the
    stream as one ``kind -1`` frame."""

    def __init__(self) -> None:
        self._buffer = b""
        self._lost = False

    def feed(self, data: bytes) -> list[Frame]:
        self._buffer += data
        out: list[Frame] = []
        while not self._lost and len(self._buffer) >= 8:
            if self._buffer[:4] == PROTOCOL_HEADER_PREFIX:
                out.append(Frame(0, 0, self._buffer[:8]))
                self._buffer = self._buffer[8:]
                continue
            size, doff, frame_type, channel = struct.unpack_from("!IBBH", self._buffer)
            if size < 8 or doff < 2 or doff * 4 > size or frame_type not in (0, 1):
                out.append(Frame(-1, 0, self._buffer))
                self._lost, self._buffer = True, b""
                break
            if len(self._buffer) < size:
                break
            kind = SASL_FRAME if frame_type == 1 else AMQP_FRAME
            out.append(Frame(kind, channel, self._buffer[doff * 4 : size]))
            self._buffer = self._buffer[size:]
        return out

    def rest(self) -> Frame | None:
        """What is left unframed when the stream ends (a truncated frame), if anything."""
        return Frame(-1, 0, self._buffer) if self._buffer and not self._lost else None
