"""codec on random methods: decode_method agrees with pamqp, encode_method reproduces pamqp's bytes, garbage
payloads give typed errors, and content frames always reassemble to the body."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pamqp import base, commands

from protocol.codec import METHODS, decode_method, encode_content, encode_method
from protocol.errors import HardError
from protocol.framing import FrameBuffer
from tests.unit.protocol.reference import as_signed, build, pamqp_decode_method, pamqp_frame, payload_of
from tests.unit.protocol.strategies import (
    channels,
    field_tables,
    longs,
    octets,
    short_strings,
    shorts,
    utf8_text,
)

_FIELD_VALUES: dict[str, st.SearchStrategy[Any]] = {
    "bit": st.booleans(),
    "octet": octets,
    "short": shorts,
    "long": longs,
    "longlong": st.integers(0, (1 << 64) - 1),
    "shortstr": short_strings,
    "longstr": utf8_text(300),
    "table": field_tables,
}
PAMQP_METHODS: list[type[base.Frame]] = sorted(commands.INDEX_MAPPING.values(), key=lambda cls: cls.index)


@st.composite
def methods(draw: st.DrawFn) -> tuple[type[base.Frame], dict[str, Any]]:
    cls = draw(st.sampled_from(PAMQP_METHODS))
    fields = {name: draw(_FIELD_VALUES[cls.amqp_type(name)]) for name in cls.__slots__}
    return cls, fields


def pamqp_fields(cls: type[base.Frame], fields: dict[str, Any]) -> dict[str, Any]:
    """pamqp packs longlong signed: hand it the signed twin of our unsigned value (same bytes)."""
    return {k: as_signed(v) if cls.amqp_type(k) == "longlong" else v for k, v in fields.items()}


@pytest.mark.filterwarnings(
    "ignore:This command is deprecated:DeprecationWarning"
)  # pamqp's Basic.RecoverAsync
@settings(max_examples=300, deadline=None)
@given(methods(), channels)
def test_decode_and_encode_agree_with_pamqp(
    method: tuple[type[base.Frame], dict[str, Any]], channel: int
) -> None:
    cls, fields = method
    wire = pamqp_frame(build(cls, **pamqp_fields(cls, fields)), channel)
    decoded = decode_method(payload_of(wire))
    reference = pamqp_decode_method(payload_of(wire))
    assert type(decoded) is type(reference) is cls
    for name in cls.__slots__:
        ours, theirs = getattr(decoded, name), getattr(reference, name)
        if cls.amqp_type(name) == "longlong":
            assert ours == theirs % (1 << 64) == fields[name]
        else:
            assert ours == theirs
    assert encode_method(channel, decoded) == wire


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(sorted(METHODS)), st.binary(max_size=80))
def test_garbage_fields_decode_or_raise_a_typed_error(index: int, fields: bytes) -> None:
    try:
        decode_method(index.to_bytes(4, "big") + fields)
    except HardError:
        pass


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=3000), st.integers(4096, 6000) | st.just(0), channels)
def test_content_frames_reassemble_to_the_body(body: bytes, frame_max: int, channel: int) -> None:
    header = b"\x00\x3c\x00\x00" + len(body).to_bytes(8, "big") + b"\x00\x00"
    frames = FrameBuffer(frame_max, expect_protocol_header=False).feed(
        b"".join(encode_content(channel, header, body, frame_max))
    )
    assert frames[0] == (2, channel, header)
    assert b"".join(payload for _, _, payload in frames[1:]) == body
    assert all(
        0 < len(payload) <= (frame_max - 8 if frame_max else len(body)) for _, _, payload in frames[1:]
    )
