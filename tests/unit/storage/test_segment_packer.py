"""The C record packer and writer (broker/storage/_segment.c) write the bytes the Python ones
(segment_format's write_records_py, record_lengths_py) write, for any message rows among any other records,
and the records read back as the rows."""

from __future__ import annotations

import errno
import os
import platform
import zlib
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from broker.storage import segment_format
from broker.storage.base import MessageRow
from broker.storage.segment_format import (
    Part,
    decode_message,
    pack_messages_py,
    record_lengths,
    record_lengths_py,
    records,
    write_records,
    write_records_py,
)

native = segment_format._native()
needs_native = pytest.mark.skipif(native is None, reason="broker.storage._segment is not built")

message_rows = st.lists(
    st.tuples(
        st.integers(0, (1 << 64) - 1),
        st.text(max_size=40),
        st.text(max_size=300),
        st.binary(max_size=60),
        st.one_of(st.binary(max_size=3000), st.binary(max_size=10).map(bytearray)),
        st.one_of(st.none(), st.integers(-(1 << 63), (1 << 63) - 1)),
        st.sampled_from((0, 1)),
    ),
    max_size=20,
)
# What one append holds: other records' bytes before, between and after runs of message rows.
appends = st.lists(st.one_of(st.binary(max_size=100), message_rows), max_size=6)


def _written(tmp_path: Path, name: str, parts: list[Part], sync: bool, writer: object) -> tuple[int, bytes]:
    path = tmp_path / name
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o644)
    try:
        written = writer(fd, parts, sync)  # type: ignore[operator]
    finally:
        os.close(fd)
    return written, path.read_bytes()


@needs_native
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(parts=appends, sync=st.booleans())
def test_the_c_writer_writes_the_python_writer_s_bytes(tmp_path: Path, parts: list[Part], sync: bool) -> None:
    assert native is not None
    lengths, write, _ = native
    expected = _written(tmp_path, "py", parts, sync, write_records_py)
    assert _written(tmp_path, "c", parts, sync, write) == expected
    assert expected[0] == len(expected[1])
    for part in parts:
        if isinstance(part, list):
            assert lengths(part) == record_lengths_py(part)


@settings(max_examples=100, deadline=None)
@given(rows=message_rows)
def test_packed_records_read_back_as_their_rows_and_lengths(rows: list[MessageRow]) -> None:
    data, lengths = pack_messages_py(rows), record_lengths(rows)
    found = [(length, decode_message(payload)) for _, length, payload in records(memoryview(data))]
    assert found == [
        (length, (*row[:4], bytes(row[4]), *row[5:])) for length, row in zip(lengths, rows, strict=True)
    ]


def test_more_parts_than_one_writev_takes_are_all_written_in_order(tmp_path: Path) -> None:
    row: MessageRow = (7, "x", "k", b"h", b"body", None, 0)
    parts: list[Part] = [b"%06d" % number if number % 3 else [row] for number in range(3000)]
    written, data = _written(tmp_path, "many", parts, True, write_records)
    assert (written, data) == _written(tmp_path, "many-py", parts, True, write_records_py)
    assert data.count(b"body") == 1000


def test_any_buffer_packs_alike_and_a_string_utf_8_cannot_hold_fails_as_in_python(tmp_path: Path) -> None:
    odd: MessageRow = (1, "x", "k", b"h", memoryview(b"body"), None, 0)  # type: ignore[assignment]
    parts: list[Part] = [b"T", [odd]]
    assert _written(tmp_path, "c", parts, False, write_records) == _written(
        tmp_path, "py", parts, False, write_records_py
    )
    surrogate: list[Part] = [b"before", [(1, "\udcff", "k", b"h", b"b", None, 0)]]
    with pytest.raises(UnicodeEncodeError):  # the C writer refuses it unwritten, then Python does too
        _written(tmp_path, "bad", surrogate, False, write_records)
    assert (tmp_path / "bad").read_bytes() == b""
    with pytest.raises(UnicodeEncodeError):
        record_lengths([(1, "\udcff", "k", b"h", b"b", None, 0)])


@needs_native
def test_a_failed_write_raises_the_os_error(tmp_path: Path) -> None:
    assert native is not None
    path = tmp_path / "read-only"
    path.write_bytes(b"")
    fd = os.open(path, os.O_RDONLY)
    try:
        with pytest.raises(OSError) as raised:
            native[1](fd, [b"a", [(1, "x", "k", b"h", b"b", None, 0)]], True)
    finally:
        os.close(fd)
    assert raised.value.errno == errno.EBADF


@needs_native
@settings(max_examples=400, deadline=None)
@given(
    data=st.one_of(st.binary(max_size=300), st.binary(min_size=1000, max_size=5000)),
    skip=st.integers(0, 15),
    value=st.integers(0, (1 << 32) - 1),
)
def test_the_c_crc_32_is_zlib_s_at_any_length_alignment_and_start_value(
    data: bytes, skip: int, value: int
) -> None:
    """From 64 bytes on the C CRC folds by carry-less multiplication (where the CPU has it, as CI's does):
    every length around the 16- and 64-byte steps, any alignment of the buffer, any running value."""
    assert native is not None
    crc32 = native[2]
    view = memoryview(data)[skip:]
    assert crc32(view, value) == zlib.crc32(view, value)
    assert crc32(view, 0) == zlib.crc32(view)


@needs_native
def test_the_c_crc_32_folds_on_this_machine_and_checks_large_buffers_alike() -> None:
    from broker.storage import _segment

    # An x86-64 CPU without PCLMULQDQ (before 2010) would take zlib's path: the test above then held nothing
    # new, so say so rather than pass quietly. Elsewhere (arm64) zlib's path is the only one.
    if platform.machine() == "x86_64":
        assert _segment.CRC_CARRYLESS == 1
    for size in (64, 65, 79, 80, 127, 128, 65535, 65536, 1 << 20):
        data = bytes(range(256)) * (size // 256) + bytes(size % 256)
        assert _segment.crc32(data, 12345) == zlib.crc32(data, 12345), size
