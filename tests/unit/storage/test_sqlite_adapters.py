"""The adapters broker.storage.sqlite registers for speed bind what sqlite3 bound without them."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import broker.storage.sqlite  # noqa: F401 - registers the adapters
from broker.storage.base import Batch, MessageRow, message_key
from broker.storage.sqlite import DB_NAME, SqliteStore


def test_bytes_bind_as_blobs_and_none_as_null() -> None:
    db = sqlite3.connect(":memory:")
    try:
        row = db.execute("SELECT ?, typeof(?), ?, typeof(?)", (b"\x00ab", b"\x00ab", None, None)).fetchone()
    finally:
        db.close()
    assert row == (b"\x00ab", "blob", None, "null")


def test_a_stored_message_row_keeps_its_types_on_disk(tmp_path: Path) -> None:
    row: MessageRow = (message_key(2, 1), "", "q", b"\x02header", b"", None, 0)
    store = SqliteStore(tmp_path)
    try:
        store.apply(Batch(1, topology=[("queue+", (2, "/", "q", 0, None))], added={row[0]: row}))
    finally:
        store.close()
    with sqlite3.connect(tmp_path / DB_NAME) as db:
        types = db.execute("SELECT typeof(header), typeof(body), typeof(expires_at) FROM messages").fetchall()
    assert types == [("blob", "blob", "null")]
