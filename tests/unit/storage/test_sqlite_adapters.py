"""The adapters broker.storage.sqlite registers for speed bind what sqlite3 bound without them."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import broker.storage.sqlite  # noqa: F401 - registers the adapters
from broker.storage.base import Batch, DelayedRow
from broker.storage.sqlite import DB_NAME, SqliteStore


def test_bytes_bind_as_blobs_and_none_as_null() -> None:
    db = sqlite3.connect(":memory:")
    try:
        row = db.execute("SELECT ?, typeof(?), ?, typeof(?)", (b"\x00ab", b"\x00ab", None, None)).fetchone()
    finally:
        db.close()
    assert row == (b"\x00ab", "blob", None, "null")


def test_stored_blobs_and_nulls_keep_their_types_on_disk(tmp_path: Path) -> None:
    """Messages of queues live in segment files now; SQLite still binds the delayed messages' header and body
    and the topology's absent arguments through the adapters."""
    delayed: DelayedRow = (1, "/", "delayed", 5_000, "", "q", b"\x02header", b"")
    store = SqliteStore(tmp_path)
    try:
        store.apply(
            Batch(1, topology=[("queue+", (2, "/", "q", 0, None))], delayed_added={delayed[0]: delayed})
        )
    finally:
        store.close()
    with sqlite3.connect(tmp_path / DB_NAME) as db:
        types = db.execute("SELECT typeof(header), typeof(body) FROM delayed_messages").fetchall()
        arguments = db.execute("SELECT typeof(arguments) FROM queues").fetchall()
    assert (types, arguments) == ([("blob", "blob")], [("null",)])
