"""SqliteStore on its own: the file it makes, the files it refuses (and leaves alone), its lock on the data
directory, the fsync policy, atomic batches, and a WAL torn by a crash."""

from __future__ import annotations

import random
import re
import shutil
import sqlite3
from pathlib import Path
from typing import cast

import pytest

from broker.storage.base import (
    KEY_SEQ_BITS,
    Batch,
    MessageRow,
    PermissionRow,
    StorageError,
    UserRow,
    key_runs,
    message_key,
)
from broker.storage.memory import MemoryStore
from broker.storage.segments import MESSAGES_DIR
from broker.storage.sqlite import DB_NAME, SqliteStore
from broker.storage.sqlite_schema import APPLICATION_ID, MIGRATIONS, SCHEMA_VERSION
from tests.unit.storage.helpers import snapshot


def _row(queue_id: int, seq: int, body: bytes = b"body", delivered: int = 0) -> MessageRow:
    return (message_key(queue_id, seq), "x", "k", b"header", body, None, delivered)


def _declare(batch_id: int, queue_id: int, name: str) -> Batch:
    return Batch(batch_id, topology=[("queue+", (queue_id, "/", name, 0, None))])


def _pragma(path: Path, name: str) -> object:
    with sqlite3.connect(path) as db:
        return db.execute(f"PRAGMA {name}").fetchone()[0]


def _fingerprint(directory: Path) -> dict[str, tuple[bytes, int]]:
    """Every file of the directory (but the store's own lock file), with its bytes and mtime."""
    return {
        path.name: (path.read_bytes(), path.stat().st_mtime_ns)
        for path in sorted(directory.iterdir())
        if path.name != ".lock"
    }


# -- the file


def test_a_new_store_is_marked_with_the_application_id_and_the_schema_version(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path)
    store.close()
    path = tmp_path / DB_NAME
    assert _pragma(path, "application_id") == APPLICATION_ID
    assert _pragma(path, "user_version") == SCHEMA_VERSION
    assert _pragma(path, "journal_mode") == "wal"


def test_a_reopened_store_keeps_topology_and_messages(tmp_path: Path) -> None:
    batch = Batch(
        1,
        topology=[
            ("vhost+", ("v",)),
            ("vhost~", ("v", '{"description": "d"}')),
            ("user+", ("alice", None, "aGFzaA==", "rabbit_password_hashing_sha256", '["management"]')),
            ("permission+", ("alice", "v", ".*", "^$", "^a")),
            ("topic_permission+", ("alice", "v", "x", "^w", "^r")),
            ("exchange+", ("v", "x", "topic", 0, 1, None)),
            ("queue+", (7, "v", "q", 1, '[["x-max-priority", "b", 3]]')),
            ("binding+", ("v", "x", "queue", "q", "a.#", "[]")),
        ],
        added={row[0]: row for row in (_row(7, 1), _row(7, 2, b"two", delivered=1))},
    )
    memory = MemoryStore()
    memory.apply(batch)
    store = SqliteStore(tmp_path)
    store.apply(batch)
    store.close()
    reopened = SqliteStore(tmp_path)
    try:
        assert snapshot(reopened, queue_ids=9) == snapshot(memory, queue_ids=9)
        assert reopened.max_queue_id() == 7
        assert list(reopened.messages(7)) == [_row(7, 1), _row(7, 2, b"two", delivered=1)]
    finally:
        reopened.close()


# -- files it refuses


def test_a_foreign_sqlite_file_is_refused_by_name_and_left_untouched(tmp_path: Path) -> None:
    path = tmp_path / DB_NAME
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE accounts (id INTEGER PRIMARY KEY, owner TEXT)")
        db.execute("INSERT INTO accounts VALUES (1, 'someone else')")
    db.close()
    before = _fingerprint(tmp_path)

    with pytest.raises(StorageError, match=re.escape(str(path))) as refused:
        SqliteStore(tmp_path)

    assert "foreign" in str(refused.value)
    assert _fingerprint(tmp_path) == before  # no schema, no WAL, not one byte written
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT owner FROM accounts").fetchall() == [("someone else",)]
    db.close()


def test_a_file_that_is_not_sqlite_is_refused_by_name_and_left_untouched(tmp_path: Path) -> None:
    path = tmp_path / DB_NAME
    path.write_bytes(random.Random(1).randbytes(8192))
    before = _fingerprint(tmp_path)

    with pytest.raises(StorageError, match=re.escape(str(path))):
        SqliteStore(tmp_path)

    assert _fingerprint(tmp_path) == before


def test_a_store_with_a_newer_schema_is_refused(tmp_path: Path) -> None:
    SqliteStore(tmp_path).close()
    path = tmp_path / DB_NAME
    with sqlite3.connect(path) as db:
        db.execute(f"PRAGMA user_version={SCHEMA_VERSION + 1}")
    db.close()

    with pytest.raises(StorageError, match=re.escape(str(path))) as refused:
        SqliteStore(tmp_path)

    assert "newer" in str(refused.value)
    assert _pragma(path, "user_version") == SCHEMA_VERSION + 1  # not migrated "back"


@pytest.mark.parametrize("kind", ["foreign", "garbage", "newer"])
def test_a_refused_file_does_not_leave_the_data_directory_locked(tmp_path: Path, kind: str) -> None:
    """Start-up fails on a bad file; once the file is moved away, the same process can open the directory
    (an embedded broker, a test) even while the refusal is still referenced, as pytest.raises keeps it."""
    path = tmp_path / DB_NAME
    if kind == "garbage":
        path.write_bytes(random.Random(2).randbytes(4096))
    elif kind == "foreign":
        with sqlite3.connect(path) as db:
            db.execute("CREATE TABLE t (x)")
        db.close()
    else:
        SqliteStore(tmp_path).close()
        with sqlite3.connect(path) as db:
            db.execute(f"PRAGMA user_version={SCHEMA_VERSION + 1}")
        db.close()

    with pytest.raises(StorageError) as refused:
        SqliteStore(tmp_path)

    for leftover in tmp_path.glob(DB_NAME + "*"):
        leftover.unlink()
    store = SqliteStore(tmp_path)  # not "in use by another broker"
    store.close()
    assert refused.value is not None


def test_a_second_store_on_a_directory_in_use_is_refused(tmp_path: Path) -> None:
    first = SqliteStore(tmp_path)
    try:
        with pytest.raises(StorageError, match=re.escape(str(tmp_path))) as refused:
            SqliteStore(tmp_path)
        assert "in use" in str(refused.value)
        first.apply(_declare(1, 1, "q"))  # the refused one did not disturb the first
        assert [row.name for row in first.load().queues] == ["q"]
    finally:
        first.close()
    second = SqliteStore(tmp_path)  # the lock goes with close()
    try:
        assert [row.name for row in second.load().queues] == ["q"]
    finally:
        second.close()


# -- fsync policy


@pytest.mark.parametrize(("fsync", "synchronous"), [("always", 2), ("batch", 1), ("never", 0)])
def test_the_fsync_policy_sets_pragma_synchronous(tmp_path: Path, fsync: str, synchronous: int) -> None:
    store = SqliteStore(tmp_path, fsync=fsync)
    try:
        assert store.db.execute("PRAGMA synchronous").fetchone()[0] == synchronous  # FULL, NORMAL, OFF
    finally:
        store.close()


def test_an_unknown_fsync_policy_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="fsync"):
        SqliteStore(tmp_path / "data", fsync="sometimes")
    assert not (tmp_path / "data").exists()


# -- acks (removed keys) are deleted as runs of consecutive keys


def test_key_runs_cover_exactly_the_keys_given_in_any_order() -> None:
    assert key_runs([7]) == [(7, 7)]
    assert key_runs([5, 3, 4, 9, 1, 10, 4]) == [(1, 1), (3, 4), (4, 5), (9, 10)]
    high = message_key(1, (1 << KEY_SEQ_BITS) - 1)  # a queue's last key and the next queue's first touch
    assert key_runs([message_key(2, 0), high]) == [(high, message_key(2, 0))]


def test_removed_keys_go_and_the_keys_between_their_runs_stay(tmp_path: Path) -> None:
    rows = [_row(1, seq) for seq in range(1, 13)]
    store = SqliteStore(tmp_path)
    try:
        store.apply(Batch(1, topology=[("queue+", (1, "/", "q1", 0, None))], added={r[0]: r for r in rows}))
        acked = [9, 2, 3, 4, 12, 7, 10]  # acked out of order, with gaps; 12 is the last stored row
        store.apply(Batch(2, removed=[message_key(1, seq) for seq in acked]))
        kept = [row[0] for row in store.messages(1)]
        assert kept == [message_key(1, seq) for seq in (1, 5, 6, 8, 11)]
    finally:
        store.close()


# -- a failed apply is all or nothing


def _failing_batches() -> list[tuple[str, Batch]]:
    added = {row[0]: row for row in (_row(1, 3), _row(2, 1))}
    return [
        ("unknown topology op", Batch(2, topology=[("vhost+", ("v",)), ("nonsense", ())], added=added)),
        (
            "constraint violated",  # an exchange's type is NOT NULL (and has no default REPLACE could use)
            Batch(
                2,
                topology=[
                    ("queue+", (2, "/", "q2", 0, None)),
                    ("exchange+", ("/", "x", None, 0, 0, None)),
                ],
                added=added,
            ),
        ),
        (
            "failure after the message writes",
            Batch(
                2,
                topology=[("queue+", (2, "/", "q2", 0, None))],
                added=added,
                delivered=[message_key(1, 1)],
                removed=[message_key(1, 2)],
                dropped_queues=[cast(int, "not a queue id")],
            ),
        ),
    ]


@pytest.mark.parametrize(
    ("label", "failing"), _failing_batches(), ids=[label for label, _ in _failing_batches()]
)
def test_a_failing_apply_leaves_nothing_of_its_batch(tmp_path: Path, label: str, failing: Batch) -> None:
    rows = (_row(1, 1), _row(1, 2))
    first = Batch(1, topology=[("queue+", (1, "/", "q1", 0, None))], added={row[0]: row for row in rows})
    store = SqliteStore(tmp_path)
    try:
        store.apply(first)
        before = snapshot(store)
        with pytest.raises(Exception):  # noqa: B017 - whatever the cause, apply must raise
            store.apply(failing)
        assert snapshot(store) == before, label
        assert not store.db.in_transaction
        store.apply(_declare(3, 3, "q3"))  # still usable
        assert [row.id for row in store.load().queues] == [1, 3]
    finally:
        store.close()
    reopened = SqliteStore(tmp_path)
    try:
        assert [row.id for row in reopened.load().queues] == [1, 3]
        assert list(reopened.messages(1)) == list(rows)
        assert list(reopened.messages(2)) == []
    finally:
        reopened.close()


def test_apply_on_a_closed_connection_raises(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path)
    store.db.close()
    try:
        with pytest.raises(sqlite3.ProgrammingError):
            store.apply(_declare(1, 1, "q"))
    finally:
        store.close()
    reopened = SqliteStore(tmp_path)
    try:
        assert reopened.load().queues == []
    finally:
        reopened.close()


# -- a WAL torn by a crash


def _wal_batches() -> list[Batch]:
    """Batches big enough to span several WAL frames (4 KiB pages) each."""
    batches: list[Batch] = []
    for number in range(1, 7):
        queue_id = 1 + number % 2
        batch = Batch(number)
        if number <= 2:
            batch.topology.append(("queue+", (queue_id, "/", f"q{queue_id}", 0, None)))
        for seq in range(number * 10, number * 10 + 5):
            row = _row(queue_id, seq, body=bytes([number]) * (700 * (seq % 4 + 1)))
            batch.added[row[0]] = row
        if number == 5:
            batch.removed = [message_key(2, 20), message_key(2, 21)]
            batch.delivered = [message_key(2, 22)]
        batches.append(batch)
    return batches


WAL_HEADER, FRAME = 32, 24 + 4096


@pytest.mark.parametrize(
    "cut",
    [0, 1, 100, FRAME - 1, FRAME, FRAME + 1, 3 * FRAME + 10, "half", "all-but-header", "all"],
)
def test_a_torn_wal_recovers_a_committed_prefix(tmp_path: Path, cut: int | str) -> None:
    """A crash mid-write leaves the WAL cut short: the store opens, holds exactly the state after some prefix
    of the committed batches (no garbage row, no half batch) and is writable afterwards."""
    source, target = tmp_path / "source", tmp_path / "target"
    store = SqliteStore(source, fsync="never")
    store.db.execute("PRAGMA wal_autocheckpoint=0")  # everything stays in the WAL
    model = MemoryStore()
    states = [snapshot(model)]
    written: set[MessageRow] = set()
    for batch in _wal_batches():
        store.apply(batch)
        model.apply(batch)
        written.update(batch.added.values())
        written.update((*row[:6], 1) for row in batch.added.values())
        states.append(snapshot(model))
    target.mkdir()
    # Copied while the store is open: what a crash would leave on disk (close() would checkpoint).
    shutil.copyfile(source / DB_NAME, target / DB_NAME)
    shutil.copyfile(source / f"{DB_NAME}-wal", target / f"{DB_NAME}-wal")
    # The message segment files, complete: each batch's records were written before its SQLite commit.
    shutil.copytree(source / MESSAGES_DIR, target / MESSAGES_DIR)
    store.close()

    wal = target / f"{DB_NAME}-wal"
    size = wal.stat().st_size
    assert size > WAL_HEADER + 10 * FRAME  # the batches really are in the WAL
    amount = {"half": size // 2, "all-but-header": size - WAL_HEADER, "all": size}.get(str(cut), cut)
    with wal.open("r+b") as file:
        file.truncate(size - cast(int, amount))

    reopened = SqliteStore(target)
    try:
        state = snapshot(reopened)
        assert state in states, f"not the state after any prefix of the batches (cut {cut})"
        if cut == 0:
            assert state == states[-1]
        for rows in state["messages"].values():
            assert set(rows) <= written
        extra = _row(3, 1, b"after the crash")
        reopened.apply(Batch(99, topology=[("queue+", (3, "/", "q3", 0, None))], added={extra[0]: extra}))
    finally:
        reopened.close()
    again = SqliteStore(target)
    try:
        assert list(again.messages(3)) == [extra]
        assert snapshot(again)["messages"][1] == state["messages"][1]
    finally:
        again.close()


def test_a_schema_1_store_migrates_its_users_to_administrators_with_full_permissions(tmp_path: Path) -> None:
    """Before tags and permissions were stored every user could do everything: migration 2 keeps that, and
    drops the rows the old user deletion left (an empty hash)."""
    with sqlite3.connect(tmp_path / DB_NAME) as db:
        db.executescript(MIGRATIONS[0])
        db.execute(f"PRAGMA application_id={APPLICATION_ID}")
        db.execute("PRAGMA user_version=1")
        db.executemany("INSERT INTO vhosts VALUES (?)", [("/",), ("v",)])
        db.execute("INSERT INTO users VALUES ('alice', NULL, 'aGFzaA==', 'rabbit_password_hashing_sha256')")
        db.execute("INSERT INTO users VALUES ('gone', NULL, '', 'rabbit_password_hashing_sha256')")
    store = SqliteStore(tmp_path)
    try:
        definitions = store.load()
        assert definitions.users == [
            UserRow("alice", None, "aGFzaA==", "rabbit_password_hashing_sha256", '["administrator"]')
        ]
        assert definitions.permissions == [
            PermissionRow("alice", "/", ".*", ".*", ".*"),
            PermissionRow("alice", "v", ".*", ".*", ".*"),
        ]
    finally:
        store.close()


def test_an_upgrade_that_fails_in_a_later_step_leaves_the_store_at_its_version(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The pending migrations run in one transaction (one fsync'd commit for a new store): a step
    that fails takes the earlier steps of the same upgrade with it, so the file is never left between
    versions."""
    with sqlite3.connect(tmp_path / DB_NAME) as db:
        db.executescript(MIGRATIONS[0])
        db.execute(f"PRAGMA application_id={APPLICATION_ID}")
        db.execute("PRAGMA user_version=1")
    failing = [*MIGRATIONS, "CREATE TABLE meta (name TEXT PRIMARY KEY)"]  # `meta` exists by then
    monkeypatch.setattr("broker.storage.sqlite.MIGRATIONS", failing)
    monkeypatch.setattr("broker.storage.sqlite.SCHEMA_VERSION", len(failing))
    with pytest.raises(StorageError):
        SqliteStore(tmp_path)
    assert _pragma(tmp_path / DB_NAME, "user_version") == 1
    with sqlite3.connect(tmp_path / DB_NAME) as db:
        tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert "runtime_parameters" not in tables  # step 2 went with the failing last step
    assert "meta" not in tables
