"""What a stream entry costs in RabbitMQ 3.10's segment files (osiris 1.3): the sizes x-max-length-bytes
retention and x-stream-max-segment-size-bytes rolls count, derived from osiris's documented file format
(src/osiris_log.erl) and measured on the 3.10.8 oracle (tests/compat/test_stream_offsets.py).

A segment file is an 8-byte header, then chunks; a chunk is a 48-byte header, its entries (a 4-byte entry
header each, then the message as rabbit_msg_record encodes it: AMQP 1.0 message-annotations, properties,
application-properties and data sections) and a trailer holding the writer's sequence (tracking). Every
segment after the first opens with a tracking snapshot chunk (one entry per writer) that takes one offset,
and the writer's first chunk after a snapshot has no trailer (the snapshot carried its sequence).

Exact for one publishing channel whose messages osiris writes one chunk each (a publisher that waits for
each confirm, or a slow one). Bounds of the difference: osiris batches messages that arrive together into
one chunk (48 bytes of chunk header and a 43-byte trailer for the batch, where this counts them per
message: up to 91 bytes more per batched message here); each further writer (publishing channel) adds 51
bytes to every later snapshot and 43 to a chunk that batches it; RabbitMQ's writer id embeds an Erlang pid
(``<0.721.0>_`` + 23 characters here: a pid of another width moves each trailer and snapshot entry by the
difference, a byte or two).
"""

from __future__ import annotations

import struct

from broker.core.model.message import Message

LOG_HEADER_BYTES = 8  # "OSIL" and the log version
CHUNK_HEADER_BYTES = 48
ENTRY_HEADER_BYTES = 4  # a simple entry: 0 bit and a 31-bit length
WRITER_ID_BYTES = 33  # "<0.721.0>_" and a 23-character base64 guid, as the oracle's writer ids measure
# Trailer: tracking type, id size, the writer id and its sequence (u64).
TRAILER_BYTES = 2 + WRITER_ID_BYTES + 8
# Snapshot chunk: header, one entry holding per writer its type, id size, id, chunk id and sequence.
SNAPSHOT_CHUNK_BYTES = CHUNK_HEADER_BYTES + ENTRY_HEADER_BYTES + 2 + WRITER_ID_BYTES + 16
SNAPSHOT_OFFSETS = 1  # the snapshot chunk holds one record
_CHUNK_BEFORE_SECTIONS = CHUNK_HEADER_BYTES + ENTRY_HEADER_BYTES

_VAR_1_LIMIT = 255  # amqp10_binary_generator: str8 / vbin8 below this size, str32 / vbin32 from it
_DESCRIPTOR = 3  # 0x00 and a smallulong section code
_U16 = struct.Struct(">H")
_U32 = struct.Struct(">I")
# AMQP 0-9-1 field value -> (AMQP 1.0 encoded size, 0-9-1 encoded size) for fixed-width types, as
# rabbit_msg_record:from_091/2 converts them; ints that fit a byte take the small encodings.
_FIXED: dict[int, tuple[int, int]] = {
    ord("t"): (2, 1),  # boolean 0x56 xx
    ord("b"): (2, 1),  # byte
    ord("B"): (2, 1),  # ubyte
    ord("s"): (3, 2),  # short
    ord("u"): (3, 2),  # ushort
    ord("f"): (5, 4),  # float
    ord("d"): (9, 8),  # double
    ord("T"): (9, 8),  # timestamp (ms)
}
# Basic property flag bits (AMQP 0-9-1 content header), highest first.
_CONTENT_TYPE, _CONTENT_ENCODING, _HEADERS, _DELIVERY_MODE, _PRIORITY = 15, 14, 13, 12, 11
_CORRELATION_ID, _REPLY_TO, _EXPIRATION, _MESSAGE_ID, _TIMESTAMP = 10, 9, 8, 7, 6
_TYPE, _USER_ID, _APP_ID = 5, 4, 3
# Header values rabbit_msg_record drops (tables, arrays) or cannot convert (decimals): 0-9-1 size only.
_DROPPED: dict[int, int] = {ord("D"): 5}


def _var(length: int) -> int:
    """A str8/vbin8 or str32/vbin32 (utf8, binary) of ``length`` bytes."""
    return length + (2 if length < _VAR_1_LIMIT else 5)


def _compound(count: int, size: int) -> int:
    """A list or map of ``count`` elements (a map counts keys and values) whose items take ``size``."""
    return size + (3 if count < _VAR_1_LIMIT and size + 1 < 256 else 9)


def _symbol(length: int) -> int:
    return length + 2


class _Cursor:
    __slots__ = ("data", "pos")

    def __init__(self, data: bytes, pos: int) -> None:
        self.data = data
        self.pos = pos

    def shortstr(self) -> bytes:
        length = self.data[self.pos]
        value = self.data[self.pos + 1 : self.pos + 1 + length]
        self.pos += 1 + length
        return value


def _skip_value(data: bytes, pos: int, kind: int) -> int:
    """The position after a 0-9-1 field value of type ``kind`` at ``pos``."""
    if kind in _FIXED:
        return pos + _FIXED[kind][1]
    if kind in (ord("I"), ord("i")):
        return pos + 4
    if kind == ord("l"):
        return pos + 8
    if kind in (ord("S"), ord("x"), ord("F"), ord("A")):
        length: int = _U32.unpack_from(data, pos)[0]
        return pos + 4 + length
    if kind in _DROPPED:
        return pos + _DROPPED[kind]
    return pos  # 'V' (void) and unknown kinds carry no value


def _headers_pairs(data: bytes, start: int, end: int) -> tuple[int, int]:
    """(pairs, encoded size) of the application-properties a 0-9-1 headers table becomes: string keys
    (utf8) with each value converted (from_091/2); tables, arrays and decimals are left out."""
    pairs = size = 0
    pos = start
    while pos < end:
        key_length = data[pos]
        pos += 1 + key_length
        kind = data[pos]
        pos += 1
        value = pos
        pos = _skip_value(data, pos, kind)
        if kind in (ord("F"), ord("A")) or kind in _DROPPED:
            continue
        pairs += 1
        size += _var(key_length) + _value_size(data, value, kind, pos)
    return pairs, size


def _value_size(data: bytes, value: int, kind: int, end: int) -> int:
    if kind in _FIXED:
        return _FIXED[kind][0]
    if kind in (ord("I"), ord("l")):  # int / long: a small encoding for -128..127
        number = int.from_bytes(data[value:end], "big", signed=True)
        return 2 if -129 < number < 128 else 1 + end - value
    if kind == ord("i"):  # uint: 0x43 for 0, smalluint below 256
        number = int.from_bytes(data[value:end], "big")
        return 1 if number == 0 else 2 if number < 256 else 5
    if kind in (ord("S"), ord("x")):
        return _var(end - value - 4)
    return 1  # void -> null


def header_bytes(exchange: str, routing_key: str, header_payload: bytes) -> int:
    """The encoded sections before the body (message-annotations, properties, application-properties) and
    the data section's descriptor, for a message with these properties (rabbit_stream_queue 3.10
    msg_to_iodata: x-exchange and x-routing-key annotations added to rabbit_msg_record:from_amqp091)."""
    flags = _U16.unpack_from(header_payload, 12)[0] if len(header_payload) >= 14 else 0
    cursor = _Cursor(header_payload, 14)
    more = flags
    while more & 1:  # continuation flag words: no Basic property lives there
        more = _U16.unpack_from(header_payload, cursor.pos)[0]
        cursor.pos += 2
    fields: dict[int, bytes] = {}
    headers_pairs = headers_size = 0
    for bit in range(_CONTENT_TYPE, 1, -1):  # down to cluster-id
        if not flags & (1 << bit):
            continue
        if bit == _HEADERS:
            length = _U32.unpack_from(header_payload, cursor.pos)[0]
            start = cursor.pos + 4
            headers_pairs, headers_size = _headers_pairs(header_payload, start, start + length)
            cursor.pos = start + length
        elif bit in (_DELIVERY_MODE, _PRIORITY):  # octets
            fields[bit] = header_payload[cursor.pos : cursor.pos + 1]
            cursor.pos += 1
        elif bit == _TIMESTAMP:
            fields[bit] = header_payload[cursor.pos : cursor.pos + 8]
            cursor.pos += 8
        else:
            fields[bit] = cursor.shortstr()
    # message-annotations: x-exchange, x-routing-key, and the 0-9-1 fields AMQP 1.0 has no property for.
    pairs = 2
    size = _symbol(10) + _var(len(exchange.encode())) + _symbol(13) + _var(len(routing_key.encode()))
    for bit, key_length in ((_PRIORITY, 16), (_DELIVERY_MODE, 21)):  # x-basic-priority / -delivery-mode
        if bit in fields:
            pairs += 1
            size += _symbol(key_length) + 2  # ubyte
    if _EXPIRATION in fields:  # x-basic-expiration: utf8
        pairs += 1
        size += _symbol(18) + _var(len(fields[_EXPIRATION]))
    total = _DESCRIPTOR + _compound(2 * pairs, size)
    # properties: a list of all 13 fields (null when unset), left out when none of the mapped ones is set.
    # message-id, correlation-id, reply-to: utf8; content-type, content-encoding: symbols.
    mapped = {_MESSAGE_ID: _var, _CORRELATION_ID: _var, _REPLY_TO: _var}
    mapped |= {_CONTENT_TYPE: _symbol, _CONTENT_ENCODING: _symbol, _USER_ID: _var}  # user-id: binary
    present = [bit for bit in (*mapped, _TIMESTAMP) if bit in fields]
    if present:
        size = 13 - len(present)  # a null byte per unset field
        for bit in present:
            size += 9 if bit == _TIMESTAMP else mapped[bit](len(fields[bit]))  # creation-time: timestamp
        total += _DESCRIPTOR + _compound(13, size)
    # application-properties: the headers, then x-basic-type and x-basic-app-id.
    for bit, key_length in ((_TYPE, 12), (_APP_ID, 14)):  # x-basic-type, x-basic-app-id
        if bit in fields:
            headers_pairs += 1
            headers_size += _var(key_length) + _var(len(fields[bit]))
    if headers_pairs:
        total += _DESCRIPTOR + _compound(2 * headers_pairs, headers_size)
    return total + _DESCRIPTOR


def body_section_bytes(body_length: int) -> int:
    """The data section's binary after its descriptor."""
    return _var(body_length)


class EntrySizer:
    """Each message's chunk size as osiris writes it alone (chunk header, entry header, encoded message,
    and the trailer unless ``after_snapshot``), with the size before the body remembered per distinct
    content header (a stream's messages mostly share theirs, and their exchange and routing key)."""

    __slots__ = ("cache",)

    def __init__(self) -> None:
        # content header -> (exchange, routing key, size before the body) of the last message seen with it
        self.cache: dict[bytes, tuple[str, str, int]] = {}

    def chunk_bytes(self, message: Message, after_snapshot: bool) -> int:
        """Per append: one lookup by the content header, no further call on a hit."""
        return self.entry_chunk_bytes(
            message.exchange, message.routing_key, message.header_payload, len(message.body), after_snapshot
        )

    def entry_chunk_bytes(
        self, exchange: str, routing_key: str, header: bytes, body_length: int, after_snapshot: bool
    ) -> int:
        """The same for a stored record (the writer thread, recovery)."""
        known = self.cache.get(header)
        if known is not None and known[0] == exchange and known[1] == routing_key:
            head = known[2]
        else:
            head = self._remember(header, exchange, routing_key)
        size = _CHUNK_BEFORE_SECTIONS + head + body_section_bytes(body_length)
        return size if after_snapshot else size + TRAILER_BYTES

    def _remember(self, header: bytes, exchange: str, routing_key: str) -> int:
        if len(self.cache) >= 1024:
            self.cache.clear()
        head = header_bytes(exchange, routing_key, header)
        self.cache[header] = (exchange, routing_key, head)
        return head


def segment_start_bytes(skipped: int) -> int:
    """A segment file before its first message: the log header, and the snapshot chunk if it has one."""
    return LOG_HEADER_BYTES + (SNAPSHOT_CHUNK_BYTES if skipped else 0)
