"""The C record packer (broker/storage/_segment.c) writes the bytes the Python one (segment_format's
pack_messages_py) writes, for any message row, and the records read back as the rows."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from broker.storage import segment_format
from broker.storage.base import MessageRow
from broker.storage.segment_format import decode_message, pack_messages, pack_messages_py, records

native = segment_format._native_packer()

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


@pytest.mark.skipif(native is None, reason="broker.storage._segment is not built")
@settings(max_examples=300, deadline=None)
@given(rows=message_rows)
def test_the_c_packer_writes_the_python_packer_s_bytes(rows: list[MessageRow]) -> None:
    assert native is not None
    assert native(rows) == pack_messages_py(rows)


@settings(max_examples=100, deadline=None)
@given(rows=message_rows)
def test_packed_records_read_back_as_their_rows(rows: list[MessageRow]) -> None:
    data, lengths = pack_messages(rows)
    found = [(length, decode_message(payload)) for _, length, payload in records(memoryview(data))]
    assert found == [
        (length, (*row[:4], bytes(row[4]), *row[5:])) for length, row in zip(lengths, rows, strict=True)
    ]


def test_any_buffer_packs_alike_and_a_string_utf_8_cannot_hold_fails_as_in_python() -> None:
    odd: MessageRow = (1, "x", "k", b"h", memoryview(b"body"), None, 0)  # type: ignore[assignment]
    assert pack_messages([odd]) == pack_messages_py([odd])
    with pytest.raises(UnicodeEncodeError):  # the C packer refuses it, then Python does (SQLite did too)
        pack_messages([(1, "\udcff", "k", b"h", b"b", None, 0)])
