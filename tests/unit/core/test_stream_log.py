"""The stream log: stable offsets, whole-segment retention by size and age, timestamp lookup, and the
x-stream-offset specs resolved against it (including x-max-age's interval syntax)."""

from __future__ import annotations

import datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from broker.core.model.message import Message
from broker.core.queues.queue_settings import max_age
from broker.core.streams.stream_filter import consumer_filter
from broker.core.streams.stream_log import StreamLog
from broker.core.streams.stream_offset import start_offset
from protocol.errors import ChannelError, HardError

RESOURCE = "queue 's' in vhost '/'"


def _message(body: bytes) -> Message:
    return Message("", "s", b"", body)


def _log(
    bodies: list[bytes], segment_bytes: int = 1_000_000, start_ms: int = 0, step_ms: int = 1000
) -> StreamLog:
    log = StreamLog(segment_bytes)
    for index, body in enumerate(bodies):
        log.append(_message(body), start_ms + index * step_ms)
    return log


def _entries(log: StreamLog) -> list[tuple[int, bytes]]:
    """(offset, body) of every message in the log, segment by segment."""
    return [
        (segment.entries_first + index, message.body)
        for segment in log.segments
        for index, message in enumerate(segment.messages)
    ]


# Measured on RabbitMQ 3.10.8 (osiris 1.3.1): 12 messages of 1000 bytes (no properties, default exchange,
# routing key "s1", one confirm each) into x-stream-max-segment-size-bytes 5000 left three segment files of
# these sizes, the later two opening with a tracking snapshot chunk at offsets 5 and 11.
ORACLE_SEGMENT_FILE_BYTES = [5718, 5778, 2352]
ORACLE_OFFSETS = [0, 1, 2, 3, 4, 6, 7, 8, 9, 10, 12, 13]
PIKA_NO_PROPERTIES = bytes.fromhex("003c0000000000000003e80000")


def test_offsets_and_segment_sizes_across_rolls_are_osiris_ones() -> None:
    log = StreamLog(5000)
    offsets = [log.append(Message("", "s1", PIKA_NO_PROPERTIES, b"x" * 1000), 0) for _ in range(12)]
    assert offsets == ORACLE_OFFSETS
    assert [segment.size_bytes for segment in log.segments] == ORACLE_SEGMENT_FILE_BYTES
    assert [(s.first_offset, s.skipped, s.count) for s in log.segments] == [(0, 0, 5), (5, 1, 5), (11, 1, 2)]
    assert (log.first_offset, log.next_offset, log.message_count) == (0, 14, 12)
    assert log.body_bytes == 12_000
    # x-stream-offset at a snapshot's offset starts at the next message; first, last and next as osiris.
    specs = (5, "first", "last", "next", 100)
    assert [start_offset(log, spec, 0, RESOURCE) for spec in specs] == [5, 0, 13, 14, 14]
    # Past the tail: the tail on 3.10.8, the offset itself on 4.0.5 (past_tail_waits), the head below it.
    assert [start_offset(log, spec, 0, RESOURCE, past_tail_waits=True) for spec in (100, -3)] == [100, 0]
    # A reader waiting at the tail rolls the full segment at once (osiris writes the snapshot): "last" is
    # still the newest message, and the next message goes after the snapshot.
    log.max_segment_size_bytes = 2000
    assert log.roll_if_full()
    assert [(s.first_offset, s.count) for s in log.segments[-2:]] == [(11, 2), (14, 0)]
    assert (start_offset(log, "last", 0, RESOURCE), log.next_offset) == (13, 15)
    assert log.append(Message("", "s1", PIKA_NO_PROPERTIES, b"x" * 1000), 0) == 15
    assert not log.rolled


@given(st.lists(st.binary(max_size=300), max_size=60), st.integers(1, 2000), st.integers(0, 4000))
def test_retention_by_size_drops_whole_segments_and_keeps_offsets(
    bodies: list[bytes], segment_bytes: int, max_bytes: int
) -> None:
    log = _log(bodies, segment_bytes)
    before = _entries(log)
    assert [body for _, body in before] == bodies
    log.apply_retention(max_bytes, None, 0)
    # What is left is a suffix starting at a segment boundary, each message at its original offset; every
    # segment after the first of the stream took one offset for its snapshot before its first message.
    after = _entries(log)
    assert after == before[len(before) - len(after) :]
    assert log.message_count == len(after)
    assert all(s.skipped == (s.first_offset > 0) for s in log.segments)
    # Only the active segment may stay over the limit; a closed segment more could not have stayed.
    assert len(log.segments) == 1 or log.size_bytes <= max_bytes
    assert log.segments[0].first_offset == log.first_offset


def test_retention_by_age_drops_segments_whose_last_append_is_older_than_max_age() -> None:
    # Each 5-byte message is a 143-byte chunk (100 after a snapshot) and a segment rolls from 250 bytes:
    # two a segment, appended at 0 s .. 5 s.
    log = _log([b"12345"] * 6, segment_bytes=250)
    assert [(s.first_offset, s.count) for s in log.segments] == [(0, 2), (2, 2), (5, 2)]
    assert [s.first_offset for s in log.apply_retention(None, 3_000, now_ms=5_000)] == [0]  # last write 1 s
    assert log.first_offset == 2
    assert len(log.apply_retention(None, 1, now_ms=100_000)) == 1  # the active segment always stays
    assert (log.first_offset, log.next_offset) == (5, 8)
    assert [offset for offset, _ in _entries(log)] == [6, 7]


def test_offset_at_finds_the_first_append_at_or_after_a_time() -> None:
    log = _log([b"a", b"b", b"c"], start_ms=10_000)
    assert [log.offset_at(ms) for ms in (0, 10_000, 10_001, 12_000, 99_000)] == [0, 0, 1, 2, 3]


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        (None, 5), ("first", 0), ("last", 4), ("next", 5), (2, 2), (-1, 0), (99, 5),
        ("2s", 3), ("1h", 0),
        (datetime.datetime.fromtimestamp(2, tz=datetime.UTC), 2),
    ],
)  # fmt: skip
def test_start_offset_specs(spec: object, expected: int) -> None:
    log = _log([b"m"] * 5)  # appended at 0 s .. 4 s
    assert start_offset(log, spec, now_ms=5_000, resource=RESOURCE) == expected


def test_an_offset_string_without_leading_digits_is_a_bare_internal_error() -> None:
    with pytest.raises(HardError) as raised:
        start_offset(_log([b"m"]), "bogus", now_ms=0, resource=RESOURCE)
    assert raised.value.reply_text == "INTERNAL_ERROR"


@pytest.mark.parametrize(
    ("value", "ms"),
    [("10s", 10_000), ("30m", 1_800_000), ("12h", 43_200_000), ("7D", 604_800_000),
     ("2M", 5_184_000_000), ("1Y", 31_536_000_000)],
)  # fmt: skip
def test_max_age_units(value: str, ms: int) -> None:
    assert max_age({"x-max-age": value}, RESOURCE) == ms


@pytest.mark.parametrize("value", ["0D", "10x", "10", "1.5h"])
def test_max_age_refused_values(value: str) -> None:
    with pytest.raises(ChannelError) as raised:
        max_age({"x-max-age": value}, RESOURCE)
    assert raised.value.text == f"invalid arg 'x-max-age' for {RESOURCE}: invalid_max_age"


def _tagged(value: object) -> Message:
    return Message("", "s", b"", b"m", None if value is None else {"x-stream-filter-value": value})


def test_consumer_filter_matches_values_and_unfiltered_only_when_asked() -> None:
    assert consumer_filter({}) is None
    assert consumer_filter({"x-stream-filter": [5]}) is None  # no string value: no filter
    wanted = consumer_filter({"x-stream-filter": ["a", "b", 7]})
    assert wanted is not None
    assert [wanted.accepts(_tagged(v)) for v in ("a", "b", "c", None, 7)] == [True, True, False, False, False]
    unfiltered = consumer_filter({"x-stream-filter": "a", "x-stream-match-unfiltered": True})
    assert unfiltered is not None
    assert [unfiltered.accepts(_tagged(v)) for v in ("a", "c", None)] == [True, False, True]


@pytest.mark.parametrize("spec", ["10x", "0s"])
def test_an_interval_with_a_bad_unit_is_an_invalid_stream_offset_arg(spec: str) -> None:
    with pytest.raises(ChannelError) as raised:
        start_offset(_log([b"m"]), spec, now_ms=0, resource=RESOURCE)
    assert raised.value.text == (
        f"invalid arg 'x-stream-offset' for {RESOURCE}: "
        f'{{invalid_stream_offset_arg,{{longstr,<<"{spec}">>}}}}'
    )


@pytest.mark.parametrize("spec", [True, [1], {"a": 1}, 1.5])
def test_other_offset_types_are_a_bare_internal_error(spec: object) -> None:
    with pytest.raises(HardError) as raised:
        start_offset(_log([b"m"]), spec, now_ms=0, resource=RESOURCE)
    assert raised.value.reply_text == "INTERNAL_ERROR"
