"""The content-header fields the broker acts on, read from a header frame's payload (hot-path rule 3).

Only delivery_mode, priority, expiration, reply_to, user_id and headers are decoded; the raw payload is kept
for delivery. Proven equal to pamqp's parse by tests/property/test_protocol_fastpath.py.
"""

from __future__ import annotations

import struct
from typing import Any, NamedTuple

from protocol.erlang_terms import binary_w
from protocol.errors import HardError, ReplyCode
from protocol.fastpath import BASIC_CLASS, MEMO_SIZE, malformed_utf8
from protocol.field_table import FieldTableError, decode_table

_CONTENT_HEADER = struct.Struct("!HHQH")  # class-id, weight, body-size, first property-flags word
_U16 = struct.Struct("!H")
_U32 = struct.Struct("!I")


class HeaderInfo(NamedTuple):
    """The content-header fields the broker acts on; the raw payload is kept for delivery (hot-path rule 3).

    Immutable (a slotted named tuple), so one instance may be shared by identical headers (see the cache)."""

    body_size: int
    delivery_mode: int | None = None
    priority: int | None = None
    expiration: str | None = None
    reply_to: str | None = None
    user_id: str | None = None
    headers: dict[str, Any] | None = None


_new_info = tuple.__new__  # HeaderInfo's generated __new__ is a Python function; this is the C constructor
# payload -> (its HeaderInfo, the first equal payload seen), for headers without a table.
_HEADER_CACHE: dict[bytes, tuple[HeaderInfo, bytes]] = {}


def _bad_properties(payload: bytes) -> HardError:
    # RabbitMQ decodes the property list lazily in rabbit_channel (ensure_content_decoded); a malformed one
    # crashes the channel process and the reader closes with 541 INTERNAL_ERROR. We answer 501 with a text.
    return HardError(
        ReplyCode.FRAME_ERROR, f"cannot decode content header {binary_w(payload[:64])}", BASIC_CLASS, 40
    )


def parse_content_header(payload: bytes) -> HeaderInfo:
    """Read a content-header payload: class 60, weight 0, body size, then the property list in flag order.

    Only delivery_mode, priority, expiration, reply_to, user_id and headers are decoded (strings are skipped
    unread, as RabbitMQ never validates their UTF-8). Errors: wrong class or non-zero weight -> 505 as
    ``rabbit_command_assembler:process/2``; truncated or trailing bytes -> 501. Publishers repeat the same
    header bytes, so results without a headers table are memoised (bounded).
    """
    return read_content_header(payload)[0]


def read_content_header(payload: bytes) -> tuple[HeaderInfo, bytes]:
    """``parse_content_header``, and the payload to keep: for a header without a table, the first equal
    payload seen, so the messages of a publisher that repeats its header share one bytes object (a backlog
    holds one per message otherwise, ~48 B, and delivery reads it from cold memory)."""
    cached = _HEADER_CACHE.get(payload)
    if cached is not None:
        return cached
    try:
        class_id, weight, body_size, flags = _CONTENT_HEADER.unpack_from(payload)
    except struct.error:
        raise _bad_properties(payload) from None
    if class_id != BASIC_CLASS:
        raise HardError(
            ReplyCode.UNEXPECTED_FRAME,
            f"expected content header for class 60, got one for class {class_id} instead",
            BASIC_CLASS,
            40,
        )
    if weight:
        # process/2 only matches weight 0; anything else falls to the "non content header" clause.
        raise HardError(
            ReplyCode.UNEXPECTED_FRAME,
            "expected content header for class 60, got non content header frame instead",
            BASIC_CLASS,
            40,
        )
    pos = 14
    end = len(payload)
    headers = delivery_mode = priority = reply_to = expiration = user_id = None
    try:
        if flags & 1:  # continuation: pamqp reads further flag words; no Basic property lives there
            more = flags
            while more & 1:
                more = _U16.unpack_from(payload, pos)[0]
                pos += 2
        if flags & 0xE000:
            if flags & 0x8000:  # content-type
                pos += 1 + payload[pos]
            if flags & 0x4000:  # content-encoding
                pos += 1 + payload[pos]
            if flags & 0x2000:  # headers
                table_end = pos + 4 + _U32.unpack_from(payload, pos)[0]
                if table_end > end:
                    raise IndexError
                headers = _decode_table(payload[pos:table_end], payload)
                pos = table_end
        if flags & 0x1000:  # delivery-mode
            delivery_mode = payload[pos]
            pos += 1
        if flags & 0x0800:  # priority
            priority = payload[pos]
            pos += 1
        if flags & 0x07FC:
            if flags & 0x0400:  # correlation-id
                pos += 1 + payload[pos]
            if flags & 0x0200:  # reply-to
                n = pos + 1 + payload[pos]
                reply_to = payload[pos + 1 : n].decode()
                pos = n
            if flags & 0x0100:  # expiration
                n = pos + 1 + payload[pos]
                expiration = payload[pos + 1 : n].decode()
                pos = n
            if flags & 0x0080:  # message-id
                pos += 1 + payload[pos]
            if flags & 0x0040:  # timestamp
                pos += 8
            if flags & 0x0020:  # type
                pos += 1 + payload[pos]
            if flags & 0x0010:  # user-id
                n = pos + 1 + payload[pos]
                user_id = payload[pos + 1 : n].decode()
                pos = n
            if flags & 0x0008:  # app-id
                pos += 1 + payload[pos]
            if flags & 0x0004:  # cluster-id
                pos += 1 + payload[pos]
    except (IndexError, struct.error):
        raise _bad_properties(payload) from None
    except UnicodeDecodeError:
        raise malformed_utf8() from None
    if pos != end:
        raise _bad_properties(payload)
    info = _new_info(HeaderInfo, (body_size, delivery_mode, priority, expiration, reply_to, user_id, headers))
    result = (info, payload)
    if headers is None:  # a headers dict is mutable: never share it
        if len(_HEADER_CACHE) >= MEMO_SIZE:
            _HEADER_CACHE.clear()
        _HEADER_CACHE[payload] = result
    return result


def _decode_table(raw: bytes, payload: bytes) -> dict[str, Any]:
    """A field table with its length prefix, in time linear in its size (protocol.field_table).

    A malformed table (a length past its container, an unknown type) crashes RabbitMQ's channel in
    ensure_content_decoded and the connection closes with 541; we close with 501 and say what failed."""
    try:
        return decode_table(raw)
    except FieldTableError:
        raise _bad_properties(payload) from None
