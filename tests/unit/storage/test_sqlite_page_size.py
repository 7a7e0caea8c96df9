"""The SQLite store's page size: new files get NEW_PAGE_SIZE, files written before keep theirs and work."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from broker.storage.base import Batch, MessageRow, message_key
from broker.storage.sqlite import DB_NAME, SqliteStore
from broker.storage.sqlite_schema import NEW_PAGE_SIZE


def _page_size(path: Path) -> int:
    with sqlite3.connect(path) as db:
        return int(db.execute("PRAGMA page_size").fetchone()[0])


def _row(seq: int) -> MessageRow:
    return (message_key(3, seq), "", "q", b"header", bytes([seq % 256]) * 1024, None, 0)


def _fill(directory: Path, first: int, count: int) -> None:
    store = SqliteStore(directory)
    try:
        rows = {row[0]: row for row in map(_row, range(first, first + count))}
        topology = [("queue+", (3, "/", "q", 0, None))] if first == 1 else []
        store.apply(Batch(1, topology=topology, added=rows))
    finally:
        store.close()


def test_a_new_store_has_the_larger_pages(tmp_path: Path) -> None:
    assert NEW_PAGE_SIZE != 4096  # SQLite's default: the test would not tell the two apart
    SqliteStore(tmp_path).close()
    assert _page_size(tmp_path / DB_NAME) == NEW_PAGE_SIZE


def test_a_store_written_with_4_kib_pages_keeps_them_and_its_messages(tmp_path: Path) -> None:
    """A data directory from before the change: opened, written and read again, its page size unchanged."""
    path = tmp_path / DB_NAME
    with sqlite3.connect(path) as db:
        db.execute("PRAGMA page_size=4096")
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("CREATE TABLE placeholder (x)")  # fixes the page size, as an older store's schema did
        db.execute("DROP TABLE placeholder")
    _fill(tmp_path, 1, 200)
    _fill(tmp_path, 201, 200)
    assert _page_size(path) == 4096
    store = SqliteStore(tmp_path)
    try:
        assert list(store.messages(3)) == [_row(seq) for seq in range(1, 401)]
    finally:
        store.close()
