"""The message segment files (broker.storage.segments) through the SQLite store that writes them: the record
format, recovery of a torn or corrupt tail and of a batch whose SQLite transaction never committed, acks of
messages in older segments, unlinking and compaction, and the rows of a store written before them."""

from __future__ import annotations

import os
import shutil
import sqlite3
from pathlib import Path

import pytest

from broker.storage.base import Batch, MessageRow, StorageError, message_key
from broker.storage.segment_format import (
    HEAD,
    decode_message,
    message_record,
    readable_end,
    records,
    segment_name,
)
from broker.storage.segments import MESSAGES_DIR
from broker.storage.sqlite import DB_NAME, SqliteStore
from broker.storage.sqlite_statements import INSERT_MESSAGE


def _row(queue_id: int, seq: int, body: bytes = b"body", delivered: int = 0) -> MessageRow:
    return (message_key(queue_id, seq), "x", "k", b"header", body, None, delivered)


def _declare(batch_id: int, *queue_ids: int) -> Batch:
    return Batch(
        batch_id, topology=[("queue+", (queue_id, "/", f"q{queue_id}", 0, None)) for queue_id in queue_ids]
    )


def _added(batch_id: int, *rows: MessageRow, **fields: object) -> Batch:
    return Batch(batch_id, added={row[0]: row for row in rows}, **fields)  # type: ignore[arg-type]


def _segments(directory: Path) -> list[str]:
    return sorted(os.listdir(directory / MESSAGES_DIR))


def _bodies(store: SqliteStore, queue_id: int) -> list[bytes]:
    return [row[4] for row in store.messages(queue_id)]


# -- the format


def test_a_message_record_reads_back_as_the_row_it_was() -> None:
    rows: list[MessageRow] = [
        (message_key(3, 7), "amq.direct", "routing.ké\udcff", b"\x02\x00header", b"\x00" * 3000, None, 0),
        (message_key(1 << 20, (1 << 40) - 1), "", "", b"", b"", 1_700_000_000_123, 1),
    ]
    data = memoryview(b"".join(part for row in rows for part in message_record(row)))
    decoded = [decode_message(payload) for _, _, payload in records(data)]
    assert decoded == rows
    assert readable_end(data) == len(data)


@pytest.mark.parametrize("damage", ["torn head", "torn payload", "bad crc", "zero length"])
def test_records_stop_at_the_first_torn_or_corrupt_one(damage: str) -> None:
    first = b"".join(message_record(_row(1, 1)))
    second = bytearray(b"".join(message_record(_row(1, 2, b"x" * 100))))
    if damage == "torn head":
        second = second[: HEAD.size - 1]
    elif damage == "torn payload":
        second = second[:-1]
    elif damage == "bad crc":
        second[-1] ^= 0x40
    else:
        second[:4] = b"\0\0\0\0"
    data = memoryview(first + bytes(second))
    assert [decode_message(payload)[0] for _, _, payload in records(data)] == [message_key(1, 1)]
    assert readable_end(data) == len(first)


# -- recovery


def _three_batches(directory: Path) -> None:
    store = SqliteStore(directory)
    try:
        store.apply(_declare(1, 1))
        store.apply(_added(2, _row(1, 1), _row(1, 2)))
        store.apply(
            _added(3, _row(1, 3, b"last"), delivered=[message_key(1, 1)], removed=[message_key(1, 2)])
        )
    finally:
        store.close()


@pytest.mark.parametrize("cut", [1, 5, HEAD.size, 40])
def test_a_torn_tail_is_cut_and_the_store_is_writable_after_it(tmp_path: Path, cut: int) -> None:
    _three_batches(tmp_path)
    (segment,) = _segments(tmp_path)
    path = tmp_path / MESSAGES_DIR / segment
    whole = path.stat().st_size
    with path.open("r+b") as file:
        file.truncate(whole - cut)  # into the last batch's records (its ack record is 8 + 17 bytes)
    reopened = SqliteStore(tmp_path)
    try:
        rows = list(reopened.messages(1))
        # The last batch lost its tail: which of its records survive depends on the cut, never a half one.
        assert [row[0] for row in rows][:1] == [message_key(1, 1)]
        assert path.stat().st_size == readable_end(memoryview(path.read_bytes())) < whole
        reopened.apply(_added(4, _row(1, 4, b"after")))
    finally:
        reopened.close()
    again = SqliteStore(tmp_path)
    try:
        assert list(again.messages(1)) == [*rows, _row(1, 4, b"after")]
    finally:
        again.close()


def test_a_bad_crc_in_the_last_segment_cuts_it_there(tmp_path: Path) -> None:
    _three_batches(tmp_path)
    (segment,) = _segments(tmp_path)
    path = tmp_path / MESSAGES_DIR / segment
    data = bytearray(path.read_bytes())
    starts = [offset for offset, _, _ in records(memoryview(bytes(data)))]
    data[starts[2] + HEAD.size + 30] ^= 0xFF  # inside the third record: the message "last" of batch 3
    path.write_bytes(bytes(data))
    reopened = SqliteStore(tmp_path)
    try:
        # Batch 3 is gone whole (its mark and ack came after the damaged record): batch 2 as it was.
        assert list(reopened.messages(1)) == [_row(1, 1), _row(1, 2)]
        assert path.stat().st_size == starts[2]
    finally:
        reopened.close()


def test_a_bad_record_before_the_last_segment_refuses_the_store(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path, segment_bytes=1)  # every batch fills its segment
    try:
        store.apply(_declare(1, 1))
        store.apply(_added(2, _row(1, 1)))
        store.apply(_added(3, _row(1, 2)))
    finally:
        store.close()
    first = tmp_path / MESSAGES_DIR / _segments(tmp_path)[0]
    data = bytearray(first.read_bytes())
    data[-1] ^= 0xFF
    first.write_bytes(bytes(data))
    with pytest.raises(StorageError, match="damaged"):
        SqliteStore(tmp_path)


def test_a_batch_whose_sqlite_transaction_never_committed_is_cut_whole(tmp_path: Path) -> None:
    """A crash after the segment's fdatasync and before SQLite's commit: the new queue is not in SQLite, and
    neither its messages nor the same batch's messages and acks of other queues survive."""
    source, crashed = tmp_path / "source", tmp_path / "crashed"
    store = SqliteStore(source, fsync="never")
    store.db.execute("PRAGMA wal_autocheckpoint=0")
    try:
        store.apply(Batch(1, topology=_declare(1, 1).topology, added={_row(1, 1)[0]: _row(1, 1)}))
        crashed.mkdir()
        shutil.copyfile(source / DB_NAME, crashed / DB_NAME)  # SQLite as it was after batch 1
        shutil.copyfile(source / f"{DB_NAME}-wal", crashed / f"{DB_NAME}-wal")
        orphan = _row(2, 1, b"orphan")
        store.apply(
            Batch(
                2,
                topology=_declare(2, 2).topology,
                added={orphan[0]: orphan, _row(1, 2)[0]: _row(1, 2)},
                removed=[message_key(1, 1)],
            )
        )
        store.apply(_added(3, _row(2, 2, b"after it")))  # a batch without an SQLite part behind it
        shutil.copytree(source / MESSAGES_DIR, crashed / MESSAGES_DIR)  # the segments as they were after it
    finally:
        store.close()
    reopened = SqliteStore(crashed)
    try:
        assert [row.id for row in reopened.load().queues] == [1]
        assert list(reopened.messages(1)) == [_row(1, 1)]
        assert list(reopened.messages(2)) == []
        assert reopened.max_queue_id() == 1
        reopened.apply(Batch(4, topology=_declare(4, 2).topology, added={_row(2, 5)[0]: _row(2, 5)}))
    finally:
        reopened.close()
    again = SqliteStore(crashed)
    try:
        assert list(again.messages(2)) == [_row(2, 5)]  # the cut records never join the new queue 2
        assert list(again.messages(1)) == [_row(1, 1)]
    finally:
        again.close()


# -- acks, unlinking, compaction


def test_an_ack_in_a_later_segment_keeps_it_until_the_acked_message_s_segment_is_gone(tmp_path: Path) -> None:
    """Segment 1 holds A and B; segment 2 holds C and the ack of A; segment 3 acks C. Segment 2 has no live
    message then, but unlinking it while segment 1 is there would bring A back at the next start."""
    a, b, c = _row(1, 1, b"a"), _row(1, 2, b"b" * 1000), _row(1, 3, b"c")  # B: segment 1 stays dense
    store = SqliteStore(tmp_path, segment_bytes=1)
    try:
        store.apply(Batch(1, topology=_declare(1, 1).topology, added={a[0]: a, b[0]: b}))
        store.apply(_added(2, c, removed=[a[0]]))
        store.apply(Batch(3, removed=[c[0]]))
        assert _segments(tmp_path) == [segment_name(1), segment_name(2), segment_name(3)]
    finally:
        store.close()
    reopened = SqliteStore(tmp_path, segment_bytes=1)
    try:
        assert _bodies(reopened, 1) == [b[4]]
        reopened.apply(Batch(4, removed=[b[0]]))  # segment 1 empties: it goes, then 2, 3 and 4 after it
        assert _segments(tmp_path) == []
    finally:
        reopened.close()
    again = SqliteStore(tmp_path)
    try:
        assert _bodies(again, 1) == []
    finally:
        again.close()


def test_a_sparse_segment_is_compacted_and_its_copies_keep_marks_and_counts(tmp_path: Path) -> None:
    rows = [_row(1, seq, bytes([seq]) * 500) for seq in range(1, 9)]
    store = SqliteStore(tmp_path, segment_bytes=1)
    try:
        store.apply(Batch(1, topology=_declare(1, 1).topology, added={row[0]: row for row in rows}))
        store.apply(Batch(2, delivered=[rows[0][0]], counted={rows[7][0]: (3, 1)}))
        # Six of eight acked: segment 1 is a quarter live, copied into this batch's segment and unlinked.
        store.apply(Batch(3, removed=[row[0] for row in rows[1:7]]))
        assert segment_name(1) not in _segments(tmp_path)
    finally:
        store.close()
    reopened = SqliteStore(tmp_path)
    try:
        assert list(reopened.messages(1)) == [(*rows[0][:6], 1), (*rows[7][:6], 1)]
        assert reopened.delivery_counts(1) == {rows[7][0]: 3}
    finally:
        reopened.close()


def test_disk_use_stays_bounded_by_live_messages(tmp_path: Path) -> None:
    """A few messages that stay while thousands come and go: old segments are compacted and unlinked."""
    store = SqliteStore(tmp_path, fsync="never", segment_bytes=64 * 1024)
    kept = [_row(1, seq, b"kept" * 100) for seq in range(1, 4)]
    try:
        store.apply(Batch(1, topology=_declare(1, 1).topology, added={row[0]: row for row in kept}))
        seq = 30
        for batch_id in range(2, 400):
            rows = [_row(1, seq + n, b"x" * 1000) for n in range(20)]
            store.apply(_added(batch_id, *rows, removed=[message_key(1, seq - 20 + n) for n in range(20)]))
            seq += 20
        on_disk = sum(path.stat().st_size for path in (tmp_path / MESSAGES_DIR).iterdir())
        assert on_disk < 4 * 64 * 1024, on_disk  # 8 MB were written
    finally:
        store.close()
    reopened = SqliteStore(tmp_path)
    try:
        assert list(reopened.messages(1))[:3] == kept
        assert len(list(reopened.messages(1))) == 3 + 20
    finally:
        reopened.close()


# -- a store written before the segment files


def test_rows_in_the_messages_table_are_read_acked_and_marked_as_before(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path)
    try:
        store.apply(_declare(1, 1))
    finally:
        store.close()
    old = [_row(1, 1, b"old1"), _row(1, 2, b"old2"), _row(1, 3, b"old3")]
    with sqlite3.connect(tmp_path / DB_NAME) as db:
        db.executemany(INSERT_MESSAGE, old)
    store = SqliteStore(tmp_path)
    try:
        assert list(store.messages(1)) == old
        store.apply(_added(2, _row(1, 4, b"new"), removed=[old[0][0]], delivered=[old[1][0]]))
        assert _bodies(store, 1) == [b"old2", b"old3", b"new"]
    finally:
        store.close()
    reopened = SqliteStore(tmp_path)
    try:
        assert list(reopened.messages(1)) == [(*old[1][:6], 1), old[2], _row(1, 4, b"new")]
        reopened.apply(Batch(3, removed=[old[1][0], old[2][0]]))
    finally:
        reopened.close()
    with sqlite3.connect(tmp_path / DB_NAME) as db:
        assert db.execute("SELECT count(*) FROM messages").fetchone() == (0,)
    again = SqliteStore(tmp_path)
    try:
        assert _bodies(again, 1) == [b"new"]
    finally:
        again.close()
