"""AMQP 1.0 codec properties: every value, performative, SASL frame and message round-trips exactly; the
frame scanner returns the same frames however the stream is cut; any octets give values or a typed error."""

from __future__ import annotations

import itertools
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from protocol.amqp10.composite import decode_composite
from protocol.amqp10.decode import decode
from protocol.amqp10.encode import encode
from protocol.amqp10.errors import AMQP10Error, ProtocolHeaderMismatch
from protocol.amqp10.frames import (
    AMQP_HEADER,
    SASL_HEADER,
    TYPE_AMQP,
    TYPE_SASL,
    Frame,
    FrameScanner,
    ProtocolHeader,
    encode_frame,
)
from protocol.amqp10.message import decode_message, decode_sections, encode_sections
from protocol.amqp10.performatives import decode_performative, encode_performative
from protocol.amqp10.sasl import decode_sasl
from protocol.amqp10.sections import (
    AmqpSequence,
    AmqpValue,
    ApplicationProperties,
    Data,
    DeliveryAnnotations,
    Footer,
    Header,
    MessageAnnotations,
    Properties,
)
from tests.unit.protocol.amqp10_strategies import (
    composites,
    fields,
    performatives,
    same,
    sasl_frames,
    values,
)


@settings(max_examples=400, deadline=None)
@given(values)
def test_every_value_round_trips_with_its_types(value: Any) -> None:
    encoded = encode(value)
    decoded = decode(encoded)
    assert same(decoded, value), (decoded, value)
    assert encode(decoded) == encoded


@settings(max_examples=300, deadline=None)
@given(performatives, st.binary(max_size=50))
def test_every_performative_round_trips(performative: Any, payload: bytes) -> None:
    body = encode_performative(performative, payload)
    decoded, rest = decode_performative(body)
    assert same(decoded, performative), (decoded, performative)
    assert rest == payload
    assert encode_performative(decoded, rest) == body


@settings(max_examples=200, deadline=None)
@given(sasl_frames)
def test_every_sasl_frame_round_trips(frame: Any) -> None:
    decoded = decode_sasl(encode(frame))
    assert same(decoded, frame)


@settings(max_examples=100, deadline=None)
@given(performatives)
def test_every_field_is_written(performative: Any) -> None:
    """As RabbitMQ 4's amqp10_framing writes its records: one list item per field, nulls included."""
    described = performative.to_described()
    assert len(described.value) == len(performative.WIRE_FIELDS)


_BODIES = st.one_of(
    st.lists(st.binary(max_size=100).map(Data), min_size=1, max_size=3),
    st.lists(st.lists(st.integers(-5, 5), max_size=3).map(AmqpSequence), min_size=1, max_size=2),
    values.map(AmqpValue).map(lambda v: [v]),
)


@st.composite
def messages(draw: st.DrawFn) -> list[Any]:
    def maybe(section: Any) -> list[Any]:
        return [section] if draw(st.booleans()) else []

    return [
        *maybe(draw(composites(Header))),
        *maybe(DeliveryAnnotations(draw(fields) or {})),
        *maybe(MessageAnnotations(draw(fields) or {})),
        *maybe(draw(composites(Properties))),
        *maybe(ApplicationProperties(draw(fields) or {})),
        *draw(_BODIES),
        *maybe(Footer(draw(fields) or {})),
    ]


@settings(max_examples=200, deadline=None)
@given(messages())
def test_messages_round_trip_and_keep_each_sections_octets(sections: list[Any]) -> None:
    payload = encode_sections(sections)
    decoded = decode_sections(payload)
    assert [same(d.section, s) for d, s in zip(decoded, sections, strict=True)] == [True] * len(sections)
    assert b"".join(d.raw for d in decoded) == payload
    assert [encode(s) for s in sections] == [d.raw for d in decoded]
    message = decode_message(payload)
    bare = [
        encode(s)
        for s in sections
        if not isinstance(s, Header | DeliveryAnnotations | MessageAnnotations | Footer)
    ]
    assert message.bare == b"".join(bare)


def _chunks(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({0, len(data), *(c % (len(data) + 1) for c in cuts)})
    return [data[a:b] for a, b in itertools.pairwise(points)]


_frames = st.builds(
    Frame,
    st.just(TYPE_AMQP),
    st.integers(0, 0xFFFF),
    st.binary(max_size=300),
    st.integers(0, 3).map(lambda words: bytes(range(words * 4))),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_frames, max_size=15), st.lists(st.integers(0, 10_000), max_size=30), st.booleans())
def test_the_scanner_gives_the_same_frames_however_the_stream_is_cut(
    frames: list[Frame], cuts: list[int], sasl_first: bool
) -> None:
    sasl = [Frame(TYPE_SASL, 0, encode(sasl_init_plain()))] if sasl_first else []
    stream = b"".join(
        [
            *(
                [SASL_HEADER, *(encode_frame(f.body, f.channel, f.frame_type) for f in sasl)]
                if sasl_first
                else []
            ),
            AMQP_HEADER,
            *(encode_frame(f.body, f.channel, f.frame_type, f.extended_header) for f in frames),
        ]
    )
    expected: list[Any] = [
        *([ProtocolHeader(SASL_HEADER), *sasl] if sasl_first else []),
        ProtocolHeader(AMQP_HEADER),
        *frames,
    ]
    scanner = FrameScanner(max_frame_size=4096)
    received: list[Any] = []
    for chunk in _chunks(stream, cuts):
        received += scanner.feed(chunk)
    assert received == expected
    assert scanner.buffered_bytes == 0


def sasl_init_plain() -> Any:
    from protocol.amqp10.sasl import SaslInit
    from protocol.amqp10.types import Symbol

    return SaslInit(mechanism=Symbol("PLAIN"), initial_response=b"\x00guest\x00guest")


@settings(max_examples=500, deadline=None)
@given(st.binary(max_size=400), st.lists(st.integers(0, 500), max_size=8), st.sampled_from([512, 0, 64]))
def test_any_octets_give_frames_or_a_typed_error(data: bytes, cuts: list[int], max_frame_size: int) -> None:
    scanner = FrameScanner(max_frame_size=max_frame_size, expect_header=False)
    try:
        for chunk in _chunks(data, cuts):
            for item in scanner.feed(chunk):
                if isinstance(item, Frame):
                    assert item.frame_type in (TYPE_AMQP, TYPE_SASL)
                    assert max_frame_size == 0 or len(item.body) + 8 <= max_frame_size
    except (AMQP10Error, ProtocolHeaderMismatch):
        pass


@settings(max_examples=1000, deadline=None)
@given(
    st.binary(max_size=200) | values.map(encode).map(lambda b: b[: len(b) // 2] + b"\x00" + b[len(b) // 2 :])
)
def test_any_octets_decode_to_a_value_or_a_decode_error(data: bytes) -> None:
    for decoder in (decode, decode_composite, decode_performative, decode_sasl, decode_message):
        try:
            decoder(data)
        except AMQP10Error:
            pass
