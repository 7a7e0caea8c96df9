"""Hot-path codecs on precompiled structs for every publish, delivery and ack (hot-path rules 2-3).

basic.publish/ack/nack/reject in; basic.deliver/get-ok/ack/nack/return out (the content header the broker
reads: protocol.content_header). Each is proven equal to pamqp byte for byte by
tests/property/test_protocol_fastpath.py. Method payloads start with the 4 class/method id bytes. Layouts
and the strict, no-trailing-bytes matching follow the generated ``decode_method_fields/2`` of
rabbit_framing_amqp_0_9_1 (deps/rabbit_common/codegen.py); delivery tags are ``longlong`` = 64-bit unsigned
there, so tags up to 2**64-1 round-trip (pamqp packs them signed: the same bytes).
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import TYPE_CHECKING, Final, TypeVar

from protocol.compiled import native_wire
from protocol.erlang_terms import binary_w
from protocol.errors import HardError, ReplyCode

BASIC_CLASS: Final = 60
BASIC_PUBLISH: Final = 0x003C0028  # (60, 40)
BASIC_RETURN: Final = 0x003C0032  # (60, 50)
BASIC_DELIVER: Final = 0x003C003C  # (60, 60)
BASIC_GET_OK: Final = 0x003C0047  # (60, 71)
BASIC_ACK: Final = 0x003C0050  # (60, 80)
BASIC_REJECT: Final = 0x003C005A  # (60, 90)
BASIC_NACK: Final = 0x003C0078  # (60, 120)

_END: Final = b"\xce"
_U32 = struct.Struct("!I")
_TAG_BITS = struct.Struct("!4xQB")  # class/method ids, delivery-tag, one octet of bits
_DELIVER_HEAD = struct.Struct("!BHIIB")  # frame header, method id, consumer-tag length
_TAG_BIT_LEN = struct.Struct("!QBB")  # delivery-tag, redelivered, exchange length
# frame header, method id, delivery-tag, redelivered, exchange length
_GET_OK_HEAD = struct.Struct("!BHIIQBB")
_COUNT_END = struct.Struct("!IB")  # message-count, frame-end
_ACK_FRAME = struct.Struct("!BHIIQBB")  # frame header, method id, delivery-tag, bits, frame-end
_RETURN_HEAD = struct.Struct("!BHIIHB")  # frame header, method id, reply-code, reply-text length
_SHORT_LEN: Final = tuple(bytes((n,)) for n in range(256))
_FRAME_HEAD = struct.Struct("!BHI")  # frame type, channel, payload size
# Memo sizes (here and protocol.content_header): a full cache is simply cleared (cheap, and hostile streams of
# distinct payloads stay bounded).
MEMO_SIZE: Final = 1024
_PUBLISH_CACHE: dict[bytes, tuple[str, str, bool, bool]] = {}


def method_frame_id(payload: bytes) -> int:
    """``(class_id << 16) | method_id`` of a method-frame payload (FrameBuffer guarantees its 4 bytes)."""
    method_id: int = _U32.unpack_from(payload)[0]
    return method_id


def cannot_decode(method_id: int, payload: bytes) -> HardError:
    """The generated decoder's fallback clause, ``rabbit_misc:frame_error/2``: 501 ``cannot decode <<...>>``
    (~w of the fields, ids stripped) on the failing method. Only a prefix is rendered: reply texts stop at
    255 bytes."""
    return HardError(
        ReplyCode.FRAME_ERROR,
        f"cannot decode {binary_w(payload[4:132])}",
        method_id >> 16,
        method_id & 0xFFFF,
    )


def malformed_utf8() -> HardError:
    """rabbit_binary_parser:assert_utf8/1: 501 ``Malformed UTF-8 in shortstr`` (method ``none``: ids 0).

    RabbitMQ skips that check for content-bearing methods (basic.publish); pamqp does not, and we decode
    names to ``str``, so we apply it everywhere."""
    return HardError(ReplyCode.FRAME_ERROR, "Malformed UTF-8 in shortstr")


def _short(value: str) -> bytes:
    raw = value.encode()
    if len(raw) > 255:
        raise ValueError(f"short string longer than 255 bytes: {value[:32]!r}...")
    return raw


# -- decoders (client -> server) -------------------------------------------------------------------------


def decode_basic_publish(payload: bytes) -> tuple[str, str, bool, bool]:
    """``(exchange, routing_key, mandatory, immediate)``; the deprecated ticket (bytes 4-5) is ignored.

    Publishers repeat the same few exchange/routing-key pairs, so results are memoised (bounded)."""
    result = _PUBLISH_CACHE.get(payload)
    if result is not None:
        return result
    try:
        ex_end = 7 + payload[6]
        rk_end = ex_end + 1 + payload[ex_end]
        bits = payload[rk_end]
        if rk_end + 1 != len(payload):
            raise IndexError
        exchange = payload[7:ex_end].decode()
        routing_key = payload[ex_end + 1 : rk_end].decode()
    except IndexError:
        raise cannot_decode(BASIC_PUBLISH, payload) from None
    except UnicodeDecodeError:
        raise malformed_utf8() from None
    result = (exchange, routing_key, (bits & 1) != 0, (bits & 2) != 0)
    if len(_PUBLISH_CACHE) >= MEMO_SIZE:
        _PUBLISH_CACHE.clear()
    _PUBLISH_CACHE[payload] = result
    return result


def decode_basic_ack(payload: bytes) -> tuple[int, bool]:
    """``(delivery_tag, multiple)``."""
    if len(payload) != 13:
        raise cannot_decode(BASIC_ACK, payload)
    tag, bits = _TAG_BITS.unpack_from(payload)
    return tag, (bits & 1) != 0


def decode_basic_nack(payload: bytes) -> tuple[int, bool, bool]:
    """``(delivery_tag, multiple, requeue)``."""
    if len(payload) != 13:
        raise cannot_decode(BASIC_NACK, payload)
    tag, bits = _TAG_BITS.unpack_from(payload)
    return tag, (bits & 1) != 0, (bits & 2) != 0


def decode_basic_reject(payload: bytes) -> tuple[int, bool]:
    """``(delivery_tag, requeue)``."""
    if len(payload) != 13:
        raise cannot_decode(BASIC_REJECT, payload)
    tag, bits = _TAG_BITS.unpack_from(payload)
    return tag, (bits & 1) != 0


# -- encoders (server -> client): full frames ------------------------------------------------------------


def encode_basic_deliver(
    channel: int, consumer_tag: str, delivery_tag: int, redelivered: bool, exchange: str, routing_key: str
) -> bytes:
    """A basic.deliver method frame."""
    ct = consumer_tag.encode()
    ex = exchange.encode()
    rk = routing_key.encode()
    lct, lex, lrk = len(ct), len(ex), len(rk)
    if (lct | lex | lrk) > 255:
        raise ValueError("basic.deliver short string longer than 255 bytes")
    return b"".join(
        (
            _DELIVER_HEAD.pack(1, channel, 16 + lct + lex + lrk, BASIC_DELIVER, lct),
            ct,
            _TAG_BIT_LEN.pack(delivery_tag, redelivered, lex),
            ex,
            _SHORT_LEN[lrk],
            rk,
            _END,
        )
    )


def py_encode_basic_deliver_content(
    channel: int,
    consumer_tag: str,
    delivery_tag: int,
    redelivered: bool,
    exchange: str,
    routing_key: str,
    header_payload: bytes,
    body: bytes,
    frame_max: int,
) -> bytes:
    """A basic.deliver frame, its content-header frame and body frame(s) as one bytes object, built with one
    join (hot-path rule 5: one write per delivery). Equal to `encode_basic_deliver` followed by
    `protocol.codec.encode_delivery`: no body frame for an empty body, ``frame_max - 8`` bytes per frame."""
    ct = consumer_tag.encode()
    ex = exchange.encode()
    rk = routing_key.encode()
    lct, lex, lrk = len(ct), len(ex), len(rk)
    if (lct | lex | lrk) > 255:
        raise ValueError("basic.deliver short string longer than 255 bytes")
    head = _FRAME_HEAD.pack
    size = len(body)
    if size and (not frame_max or size <= frame_max - 8):  # the common case: one body frame
        return b"".join(
            (
                _DELIVER_HEAD.pack(1, channel, 16 + lct + lex + lrk, BASIC_DELIVER, lct),
                ct,
                _TAG_BIT_LEN.pack(delivery_tag, redelivered, lex),
                ex,
                _SHORT_LEN[lrk],
                rk,
                _END,
                head(2, channel, len(header_payload)),
                header_payload,
                _END,
                head(3, channel, size),
                body,
                _END,
            )
        )
    parts: list[bytes | memoryview] = [
        _DELIVER_HEAD.pack(1, channel, 16 + lct + lex + lrk, BASIC_DELIVER, lct),
        ct,
        _TAG_BIT_LEN.pack(delivery_tag, redelivered, lex),
        ex,
        _SHORT_LEN[lrk],
        rk,
        _END,
        head(2, channel, len(header_payload)),
        header_payload,
        _END,
    ]
    chunk = frame_max - 8
    view = memoryview(body)
    for start in range(0, size, chunk):
        part = view[start : start + chunk]
        parts += (head(3, channel, len(part)), part, _END)
    return b"".join(parts)


_T = TypeVar("_T")
_WIRE = native_wire()
# The C twin (protocol/_wire.c) where it is built and the pure variant is not asked for: the same bytes.
encode_basic_deliver_content: Callable[[int, str, int, bool, str, str, bytes, bytes, int], bytes] = (
    py_encode_basic_deliver_content if _WIRE is None else _WIRE.encode_basic_deliver_content
)


def _tracked(value: _T, /) -> _T:
    return value


# untrack(obj) -> obj: the cyclic collector no longer traverses it (protocol/_wire.c says when that is safe
# and what it saves). The pure variant leaves it tracked: the same program, more collector work.
if TYPE_CHECKING:

    def untrack(value: _T, /) -> _T: ...

else:
    untrack = _tracked if _WIRE is None else _WIRE.untrack


def encode_basic_get_ok(
    channel: int, delivery_tag: int, redelivered: bool, exchange: str, routing_key: str, message_count: int
) -> bytes:
    """A basic.get-ok method frame."""
    ex = _short(exchange)
    rk = _short(routing_key)
    lex, lrk = len(ex), len(rk)
    return b"".join(
        (
            _GET_OK_HEAD.pack(1, channel, 19 + lex + lrk, BASIC_GET_OK, delivery_tag, redelivered, lex),
            ex,
            _SHORT_LEN[lrk],
            rk,
            _COUNT_END.pack(message_count, 0xCE),
        )
    )


def encode_basic_ack(channel: int, delivery_tag: int, multiple: bool) -> bytes:
    """A basic.ack method frame (publisher confirms)."""
    return _ACK_FRAME.pack(1, channel, 13, BASIC_ACK, delivery_tag, multiple, 0xCE)


def encode_basic_nack(channel: int, delivery_tag: int, multiple: bool, requeue: bool = False) -> bytes:
    """A basic.nack method frame (publisher confirms; RabbitMQ sends requeue=false)."""
    return _ACK_FRAME.pack(1, channel, 13, BASIC_NACK, delivery_tag, multiple | (requeue << 1), 0xCE)


def encode_basic_return(
    channel: int, reply_code: int, reply_text: str, exchange: str, routing_key: str
) -> bytes:
    """A basic.return method frame (mandatory publish that nothing routed: 312 ``NO_ROUTE``)."""
    text = _short(reply_text)
    ex = _short(exchange)
    rk = _short(routing_key)
    lt, lex, lrk = len(text), len(ex), len(rk)
    return b"".join(
        (
            _RETURN_HEAD.pack(1, channel, 9 + lt + lex + lrk, BASIC_RETURN, reply_code, lt),
            text,
            _SHORT_LEN[lex],
            ex,
            _SHORT_LEN[lrk],
            rk,
            _END,
        )
    )
