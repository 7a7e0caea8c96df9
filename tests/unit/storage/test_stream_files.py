"""Stream segment files: chunks appended per commit, one file per core segment, a sparse index that makes
attaching at an offset or a timestamp a bounded read, torn chunks cut off at recovery, retention deleting
whole files."""

from __future__ import annotations

from pathlib import Path

from broker.core.streams.stream_file_bytes import EntrySizer, segment_start_bytes
from broker.core.streams.stream_log import ClosedSegmentMeta
from broker.storage.stream_files import (
    INDEX_ENTRY,
    INDEX_INTERVAL_BYTES,
    StreamFiles,
    StreamRow,
    segment_name,
)
from broker.storage.stream_reader import SegmentReader

BODY = b"b" * 1024


def _rows(queue_id: int, segment_first: int, first: int, count: int, t0: int = 1000) -> list[StreamRow]:
    return [
        (queue_id, segment_first, offset, t0 + offset, "ex", f"rk{offset}", b"\x00\x02", BODY)
        for offset in range(first, first + count)
    ]


def _segment(root: Path, queue_id: int, first: int) -> Path:
    return root / str(queue_id) / f"{segment_name(first)}.segment"


def _counted(count: int, skipped: int) -> int:
    """A segment of ``count`` rows as osiris would write it (each row alone in its chunk)."""
    sizer = EntrySizer()
    return segment_start_bytes(skipped) + sum(
        sizer.entry_chunk_bytes("ex", f"rk{n}", b"\x00\x02", len(BODY), skipped > 0 and not n)
        for n in range(count)
    )


def test_appends_come_back_in_order_per_segment(tmp_path: Path) -> None:
    files = StreamFiles(tmp_path, fsync=True)
    files.append(_rows(7, 0, 0, 3))
    # One commit that rolls to a new segment, whose first offset (5) is RabbitMQ's tracking snapshot's.
    files.append(_rows(7, 0, 3, 2) + _rows(7, 5, 6, 2))
    files.close()
    segments = list(StreamFiles(tmp_path, fsync=True).segments(7))
    # The closed segment comes back from its index's seal, unread; the open one with its records, and the
    # offset its snapshot took.
    assert segments[0] == (0, 0, ClosedSegmentMeta(5, 5 * len(BODY), 1004, _counted(5, 0), 0))
    assert segments[1][:2] == (5, 1)
    assert segments[1][2] == [(o, 1000 + o, "ex", f"rk{o}", b"\x00\x02", BODY) for o in (6, 7)]
    recovered = StreamFiles(tmp_path, fsync=True)
    list(recovered.segments(7))
    assert recovered.written[7] == 8


def test_a_sealed_segment_after_a_snapshot_keeps_its_gap(tmp_path: Path) -> None:
    files = StreamFiles(tmp_path, fsync=False)
    files.append(_rows(6, 0, 0, 2) + _rows(6, 2, 3, 3) + _rows(6, 6, 7, 1))
    files.close()
    segments = list(StreamFiles(tmp_path, fsync=False).segments(6))
    assert [(first, skipped) for first, skipped, _ in segments] == [(0, 0), (2, 1), (6, 1)]
    assert segments[1][2] == ClosedSegmentMeta(3, 3 * len(BODY), 1005, _counted(3, 1), 1)


def test_start_up_reads_a_sealed_closed_segment_only_through_its_index(tmp_path: Path) -> None:
    files = StreamFiles(tmp_path, fsync=False)
    files.append(_rows(8, 0, 0, 4) + _rows(8, 4, 4, 1))
    files.close()
    closed = _segment(tmp_path, 8, 0)
    data = bytearray(closed.read_bytes())
    data[-5] ^= 0xFF  # damage it behind the seal's back: start-up does not read it
    closed.write_bytes(bytes(data))
    recovered = StreamFiles(tmp_path, fsync=False)
    segments = list(recovered.segments(8))
    assert segments[0] == (0, 0, ClosedSegmentMeta(4, 4 * len(BODY), 1003, _counted(4, 0), 0))
    assert len(segments[1][2]) == 1  # type: ignore[arg-type]
    assert recovered.written[8] == 5


def test_a_closed_segment_without_a_valid_seal_is_scanned_and_sealed(tmp_path: Path) -> None:
    files = StreamFiles(tmp_path, fsync=False)
    files.append(_rows(9, 0, 0, 3) + _rows(9, 3, 3, 1))
    files.close()
    index = _segment(tmp_path, 9, 0).with_suffix(".index")
    sealed = index.read_bytes()
    index.write_bytes(sealed[: -3 * INDEX_ENTRY.size])  # as written before seals existed
    first = next(StreamFiles(tmp_path, fsync=False).segments(9))
    assert [r[0] for r in first[2]] == [0, 1, 2]  # type: ignore[union-attr]
    assert index.read_bytes() == sealed  # the repair seals it: the next start-up skips it
    meta = ClosedSegmentMeta(3, 3 * len(BODY), 1002, _counted(3, 0), 0)
    assert next(StreamFiles(tmp_path, fsync=False).segments(9)) == (0, 0, meta)


def test_a_torn_chunk_is_cut_off_and_later_segments_go(tmp_path: Path) -> None:
    files = StreamFiles(tmp_path, fsync=False)
    files.append(_rows(1, 0, 0, 4))
    files.append(_rows(1, 0, 4, 2))
    files.append(_rows(1, 6, 6, 1))
    files.close()
    first = _segment(tmp_path, 1, 0)
    whole = first.stat().st_size
    with open(first, "r+b") as segment:  # a crash in the middle of the second chunk's write
        segment.truncate(whole - 100)
    segments = list(StreamFiles(tmp_path, fsync=False).segments(1))
    # Its seal no longer names the file's size: the segment is scanned and the torn chunk cut off.
    assert [(f, [r[0] for r in records]) for f, _s, records in segments] == [(0, [0, 1, 2, 3])]  # type: ignore[union-attr]
    assert not _segment(tmp_path, 1, 6).exists()
    # Appending after recovery continues the repaired file.
    files = StreamFiles(tmp_path, fsync=False)
    files.append(_rows(1, 0, 4, 1))
    files.close()
    assert [r[0] for r in next(StreamFiles(tmp_path, fsync=False).segments(1))[2]] == [0, 1, 2, 3, 4]  # type: ignore[union-attr]


def test_a_corrupt_chunk_fails_its_crc(tmp_path: Path) -> None:
    files = StreamFiles(tmp_path, fsync=False)
    files.append(_rows(2, 0, 0, 2))
    files.append(_rows(2, 0, 2, 2))
    files.close()
    path = _segment(tmp_path, 2, 0)
    data = bytearray(path.read_bytes())
    data[-5] ^= 0xFF
    path.write_bytes(bytes(data))
    assert [r[0] for r in next(StreamFiles(tmp_path, fsync=False).segments(2))[2]] == [0, 1]  # type: ignore[union-attr]


def test_retention_deletes_whole_segment_files_and_queue_deletion_the_directory(tmp_path: Path) -> None:
    files = StreamFiles(tmp_path, fsync=False)
    files.append(_rows(3, 0, 0, 2) + _rows(3, 2, 2, 2) + _rows(3, 4, 4, 1))
    files.drop_segments(3, [0, 2])
    assert sorted(p.name for p in (tmp_path / "3").iterdir()) == [
        f"{segment_name(4)}.index",
        f"{segment_name(4)}.segment",
    ]
    assert [f for f, _s, _r in files.segments(3)] == [4]
    files.drop_queue(3)
    assert not (tmp_path / "3").exists()
    assert files.max_queue_id() == 0


def test_the_index_is_sparse_and_attaching_reads_a_bounded_span(tmp_path: Path) -> None:
    """20 000 one-KiB entries in one segment: the index holds one entry per 64 KiB, and reading from any
    offset or timestamp costs at most the interval plus one chunk, wherever it is in the segment."""
    files = StreamFiles(tmp_path, fsync=False)
    for first in range(0, 20_000, 10):  # ten entries per commit, as a group commit writes a chunk
        files.append(_rows(4, 0, first, 10))
    files.close()
    path = _segment(tmp_path, 4, 0)
    entries = path.with_suffix(".index").stat().st_size // INDEX_ENTRY.size
    assert 1 < entries <= path.stat().st_size // INDEX_INTERVAL_BYTES + 1
    reader = SegmentReader(path)
    chunk_bytes = path.stat().st_size // 2000
    for offset in (0, 1234, 10_001, 19_999):
        assert [r[0] for r in reader.read_from_offset(offset, 3)] == list(
            range(offset, min(offset + 3, 20_000))
        )
        assert reader.bytes_read <= INDEX_INTERVAL_BYTES + 2 * chunk_bytes
    for offset in (5, 15_555):
        records = reader.read_from_timestamp(1000 + offset, 1)
        assert records[0][0] == offset
        assert reader.bytes_read <= INDEX_INTERVAL_BYTES + 2 * chunk_bytes


def test_a_damaged_index_is_rebuilt_at_recovery(tmp_path: Path) -> None:
    files = StreamFiles(tmp_path, fsync=False)
    for first in range(0, 1000, 10):
        files.append(_rows(5, 0, first, 10))
    files.close()
    index = _segment(tmp_path, 5, 0).with_suffix(".index")
    good = index.read_bytes()
    index.write_bytes(good[:-7])
    list(StreamFiles(tmp_path, fsync=False).segments(5))
    assert index.read_bytes() == good


def test_a_segment_rolled_before_its_first_entry_comes_back_empty_after_its_snapshot(tmp_path: Path) -> None:
    files = StreamFiles(tmp_path, fsync=True)
    files.append(_rows(11, 0, 0, 3))
    files.roll(11, 3)  # a reader waited at the tail of a full segment: osiris wrote the snapshot at 3
    files.roll(11, 3)  # the same roll again changes nothing
    files.close()
    assert _segment(tmp_path, 11, 3).stat().st_size == 0
    segments = list(StreamFiles(tmp_path, fsync=True).segments(11))
    assert segments == [(0, 0, ClosedSegmentMeta(3, 3 * len(BODY), 1002, _counted(3, 0), 0)), (3, 1, [])]
    files = StreamFiles(tmp_path, fsync=True)
    list(files.segments(11))
    files.append(_rows(11, 3, 4, 1))  # the next entry goes after the snapshot's offset
    files.close()
    assert list(StreamFiles(tmp_path, fsync=True).segments(11))[1][:2] == (3, 1)
