"""The SQLite store (stdlib ``sqlite3``, WAL): one file under the data directory, written by one thread.

SQLite holds the topology, the delayed-exchange messages and the clean-stop mark. Persistent messages of
classic and quorum queues go to segment files beside it (broker.storage.segments), each batch's records
appended and fdatasynced before the SQLite transaction of the same batch commits; a message routed to
several durable queues is stored once per queue. A store written before the segment files keeps its rows in
the ``messages`` table: they are read as before, and their acks, marks and deletions still go to the table
until it is empty. The file is marked with an ``application_id`` so a foreign SQLite file is refused instead
of being written into, and ``user_version`` holds the schema version that the migrations below bring it to.
"""

from __future__ import annotations

import fcntl
import os
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from broker.core.queues.stream_disk import StreamDisk
from broker.storage.base import (
    KEY_SEQ_BITS,
    Batch,
    BindingRow,
    Definitions,
    DelayedRow,
    ExchangeRow,
    MessageRow,
    ParameterRow,
    PermissionRow,
    QueueRow,
    StorageError,
    TopicPermissionRow,
    UserRow,
    key_runs,
    queue_key_range,
)
from broker.storage.segment_recovery import recover_segments
from broker.storage.segments import MESSAGES_DIR, SEGMENT_BYTES, SegmentLog
from broker.storage.sqlite_schema import APPLICATION_ID, MIGRATIONS, NEW_PAGE_SIZE, SCHEMA_VERSION
from broker.storage.sqlite_statements import (
    COUNT_RETURN,
    DELETE_EXCHANGE,
    DELETE_MESSAGES,
    DELETE_QUEUE,
    DELETE_USER,
    DELETE_VHOST,
    MARK_DELIVERED,
    TOPOLOGY_SQL,
)

if TYPE_CHECKING:
    from broker.storage.stream_files import StoredSegment, StreamFiles

DB_NAME = "warrenmq.db"
STREAMS_DIR = "streams"  # stream queues' segment files (broker.storage.stream_files), one directory each
# fsync policy -> PRAGMA synchronous. always: each group commit is fsynced before its confirms go out.
# batch: WAL with synchronous=NORMAL, fsync at checkpoints; a process crash loses nothing committed, a power
# loss may lose the last commits. never: leave flushing to the OS.
SYNCHRONOUS = {"always": "FULL", "batch": "NORMAL", "never": "OFF"}


class SqliteStore:
    threaded = True

    def __init__(
        self, data_dir: str | os.PathLike[str], fsync: str = "always", segment_bytes: int = SEGMENT_BYTES
    ) -> None:
        if fsync not in SYNCHRONOUS:
            raise ValueError(f"fsync must be one of {sorted(SYNCHRONOUS)}")
        self.directory = Path(data_dir)
        self.path = self.directory / DB_NAME
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise StorageError(f"cannot create data directory {self.directory}: {error}") from error
        self._lock = self._lock_directory()
        self.streams_root = self.directory / STREAMS_DIR
        self._streams: StreamFiles | None = None
        self._streams_fsync = fsync == "always"
        self.on_disk = True
        self.syncs_each_commit = fsync == "always"  # synchronous=FULL: each commit ends in an fsync
        self._streams_lock = threading.Lock()  # the loop (stream_disk) or the writer may load it first
        if self.streams_root.is_dir():  # streams were written here: recovery and stale drops need the files
            self._streams = self.streams
        db: sqlite3.Connection | None = None
        try:
            # Used by the loop thread at start-up and by the writer thread afterwards, never both at once.
            self.db = db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            self._prepare(fsync)
            self._legacy_messages = self._table_has_messages()
            self.segments = SegmentLog(self.directory / MESSAGES_DIR, fsync, segment_bytes)
            row = db.execute("SELECT value FROM meta WHERE name = 'segment_batch'").fetchone()
            self._transactions = row[0] if row else 0  # batches with records and an SQLite part
            recover_segments(self.segments, self._transactions)
        except BaseException as error:
            # Whatever refused the file (a StorageError from _prepare too): release the directory and file.
            if db is not None:
                db.close()
            self._lock.close()
            if isinstance(error, sqlite3.DatabaseError):
                raise StorageError(f"{self.path} is not a usable WarrenMQ store: {error}") from error
            raise

    @property
    def streams(self) -> StreamFiles:
        """The stream segment files, loaded with the first stream: a broker without streams never imports
        them (start-up time)."""
        with self._streams_lock:
            if self._streams is None:
                from broker.storage.stream_files import StreamFiles

                self._streams = StreamFiles(self.streams_root, fsync=self._streams_fsync)
            return self._streams

    def _lock_directory(self) -> Any:
        """One broker per data directory: a second one would interleave writes with the first."""
        lock = open(self.directory / ".lock", "a+")  # noqa: SIM115 - held open for the store's lifetime
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as error:
            lock.close()
            raise StorageError(f"data directory {self.directory} is in use by another broker") from error
        return lock

    def _prepare(self, fsync: str) -> None:
        db = self.db
        application_id = db.execute("PRAGMA application_id").fetchone()[0]
        version = db.execute("PRAGMA user_version").fetchone()[0]
        tables = db.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
        if application_id not in (0, APPLICATION_ID) or (application_id == 0 and tables):
            raise StorageError(
                f"{self.path} is not a WarrenMQ store (foreign SQLite file); refusing to use it"
            )
        if version > SCHEMA_VERSION:
            raise StorageError(
                f"{self.path} has schema version {version}, newer than this WarrenMQ ({SCHEMA_VERSION})"
            )
        if tables == 0:
            db.execute(f"PRAGMA page_size={NEW_PAGE_SIZE}")  # before the first write fixes it
        # SQLite's own temporary files (statement journals, which spill to a file past 64 KiB, a page or two
        # here; sorts) stay in memory: the data directory may be the only writable place, as in a container
        # run with --read-only and a volume, where a temp file under /tmp or the working directory fails.
        db.execute("PRAGMA temp_store=MEMORY")
        db.execute("PRAGMA journal_mode=WAL")
        db.execute(f"PRAGMA synchronous={SYNCHRONOUS[fsync]}")
        if version == SCHEMA_VERSION:
            return
        # Every pending step in one transaction: an upgrade is all or nothing, and a fresh store pays one
        # fsync'd commit, not one per step (four took ~2 ms more of each first start here).
        db.execute("BEGIN IMMEDIATE")
        try:
            for step in range(version, SCHEMA_VERSION):
                for statement in _statements(MIGRATIONS[step]):
                    db.execute(statement)
            db.execute(f"PRAGMA application_id={APPLICATION_ID}")
            db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:  # an I/O error may have rolled it back already; keep that error
                db.execute("ROLLBACK")
            raise

    # -- recovery

    def load(self) -> Definitions:
        db = self.db
        try:
            vhosts = db.execute("SELECT name, metadata FROM vhosts ORDER BY name").fetchall()
            return Definitions(
                [row[0] for row in vhosts],
                [UserRow(*row) for row in db.execute("SELECT * FROM users ORDER BY name")],
                [ExchangeRow(*row) for row in db.execute("SELECT * FROM exchanges ORDER BY vhost, name")],
                [QueueRow(*row) for row in db.execute("SELECT * FROM queues ORDER BY id")],
                [BindingRow(*row) for row in db.execute("SELECT * FROM bindings")],
                [
                    ParameterRow(*row)
                    for row in db.execute("SELECT * FROM runtime_parameters ORDER BY vhost, component, name")
                ],
                [PermissionRow(*row) for row in db.execute("SELECT * FROM permissions ORDER BY user, vhost")],
                [TopicPermissionRow(*row) for row in db.execute("SELECT * FROM topic_permissions")],
                {name: metadata for name, metadata in vhosts if metadata is not None},
            )
        except sqlite3.DatabaseError as error:
            raise StorageError(f"cannot read {self.path}: {error}") from error

    def _table_has_messages(self) -> bool:
        return self.db.execute("SELECT 1 FROM messages LIMIT 1").fetchone() is not None

    def messages(self, queue_id: int) -> Iterator[MessageRow]:
        rows = self.segments.rows(queue_id)
        if not self._legacy_messages:
            return iter(rows)
        low, high = queue_key_range(queue_id)
        try:
            rows += self.db.execute(
                "SELECT key, exchange, routing_key, header, body, expires_at, delivered FROM messages"
                " WHERE key >= ? AND key < ? ORDER BY key",
                (low, high),
            ).fetchall()
        except sqlite3.DatabaseError as error:
            raise StorageError(f"cannot read messages from {self.path}: {error}") from error
        return iter(sorted(rows, key=lambda row: row[0]))

    def max_queue_id(self) -> int:
        row = self.db.execute("SELECT max(id) FROM queues").fetchone()
        top_message = self.db.execute("SELECT max(key) FROM messages").fetchone()
        streams = 0 if self._streams is None else self._streams.max_queue_id()
        top = max(row[0] or 0, (top_message[0] or 0) >> KEY_SEQ_BITS, self.segments.top_queue_id())
        return max(top, streams)

    def begin(self) -> bool:
        db = self.db
        row = db.execute("SELECT value FROM meta WHERE name = 'clean'").fetchone()
        db.execute("INSERT OR REPLACE INTO meta VALUES ('clean', 0)")  # autocommit: on disk before serving
        return bool(row and row[0])

    def delivery_counts(self, queue_id: int) -> dict[int, int]:
        low, high = queue_key_range(queue_id)
        query = "SELECT key, delivery_count FROM messages WHERE key >= ? AND key < ? AND delivery_count > 0"
        counts = dict(self.db.execute(query, (low, high)).fetchall()) if self._legacy_messages else {}
        counts.update(self.segments.delivery_counts(queue_id))
        return counts

    def delayed_messages(self) -> Iterator[DelayedRow]:
        return iter(self.db.execute("SELECT * FROM delayed_messages ORDER BY due_ms, key").fetchall())

    def max_delayed_key(self) -> int:
        return int(self.db.execute("SELECT max(key) FROM delayed_messages").fetchone()[0] or 0)

    def stream_segments(self, queue_id: int) -> Iterator[StoredSegment]:
        return self.streams.segments(queue_id)

    def stream_disk(self, queue_id: int) -> StreamDisk | None:
        from broker.storage.stream_reader import SegmentFilesDisk

        written = self.streams.written
        return SegmentFilesDisk(self.streams.directory(queue_id), lambda: written.get(queue_id, 0))

    # -- writing (the writer thread)

    def apply(self, batch: Batch) -> None:
        stale_streams: list[int] = []  # new queues' ids: a crash mid-delete may have left their files
        gone_streams = list(batch.dropped_queues)
        messages = batch.added or batch.delivered or batch.removed or batch.counted
        legacy = self._legacy_messages and messages
        if batch.topology or batch.dropped_queues or batch.delayed_added or batch.delayed_removed or legacy:
            self._apply_rows(batch, stale_streams, gone_streams)
            if legacy:
                self._legacy_messages = self._table_has_messages()
        elif messages:  # the hot path: message records only, no SQLite transaction
            self.segments.write(batch, [])
        # Stream files after the commit: a crash in between leaves the queue without the entries of this
        # batch, which nobody was told were confirmed. No stream files (none at open, none since): nothing to
        # drop either.
        if self._streams is None and not (batch.stream_appends or batch.stream_rolls or batch.stream_dropped):
            return
        streams = self.streams
        for queue_id in stale_streams:
            streams.drop_queue(queue_id)
        if batch.stream_appends:
            streams.append(batch.stream_appends)
        for queue_id, first in batch.stream_rolls:
            streams.roll(queue_id, first)
        for queue_id, first in batch.stream_dropped:
            streams.drop_segments(queue_id, [first])
        for queue_id in gone_streams:
            streams.drop_queue(queue_id)

    def apply_all(self, batches: list[Batch]) -> None:
        """Batches in order, each as `apply` does it, except that consecutive batches of message records only
        are one append to the segment files, one write and one fdatasync: the writer thread takes every batch
        handed to it while it was committing (broker.storage.writer)."""
        run: list[Batch] = []
        for batch in batches:
            if batch.empty():
                continue  # handed over for its waiters, behind batches still committing
            if batch.messages_only() and not self._legacy_messages:  # what `apply` writes as segment records
                run.append(batch)
                continue
            if run:
                self.segments.write_all(run)
                run = []
            self.apply(batch)
        if run:
            self.segments.write_all(run)

    def _deleted_queues(self, batch: Batch) -> list[int]:
        """The queues whose messages the batch's topology deletes (queue-, and vhost- for the queues in the
        vhost at that point of the batch), as the SQLite statements would have deleted their rows."""
        deleted: list[int] = []
        vhost_of: dict[int, str | None] = {}  # queues this batch declared (their vhost) or deleted (None)
        for op, row in batch.topology:
            if op == "queue+":
                vhost_of[row[0]] = row[1]
            elif op == "queue-":
                deleted.append(row[0])
                vhost_of[row[0]] = None
            elif op == "vhost-":
                stored = [r[0] for r in self.db.execute("SELECT id FROM queues WHERE vhost = ?", row)]
                ids = [queue_id for queue_id in stored if queue_id not in vhost_of]
                ids += [queue_id for queue_id, vhost in vhost_of.items() if vhost == row[0]]
                deleted += ids
                vhost_of.update(dict.fromkeys(ids))
        return deleted

    def _apply_rows(self, batch: Batch, stale_streams: list[int], gone_streams: list[int]) -> None:
        """The batch's SQLite part, one transaction. The message records are written (and under always made
        durable) after its statements ran and before it commits: a statement that fails leaves no record, and
        a crash before the commit leaves records behind a ``T`` record whose number SQLite's ``meta`` does not
        hold, where recovery cuts the log (broker.storage.segment_recovery)."""
        db = self.db
        deleted = self._deleted_queues(batch) if batch.topology else []
        db.execute("BEGIN IMMEDIATE")
        try:
            for op, row in batch.topology:
                if op == "queue+":
                    stale_streams.append(row[0])
                elif op == "vhost-":
                    gone_streams += [r[0] for r in db.execute("SELECT id FROM queues WHERE vhost = ?", row)]
                if op == "vhost-":
                    for statement in DELETE_VHOST:
                        db.execute(statement, row)
                elif op == "user-":
                    for statement in DELETE_USER:
                        db.execute(statement, row)
                elif op == "queue-":
                    for statement in DELETE_QUEUE:
                        db.execute(statement, row)
                elif op == "exchange-":
                    for statement in DELETE_EXCHANGE:
                        db.execute(statement, row)
                else:
                    db.execute(TOPOLOGY_SQL[op], row)
            legacy = self._legacy_messages  # rows of a store written before the segment files
            if legacy and batch.delivered:
                # A message delivered and acked within one batch (ack each keeps a pipeline of them) loses its
                # row below, in the same transaction: its mark would be a row rewritten for nothing.
                gone = set(batch.removed)
                db.executemany(MARK_DELIVERED, [(key,) for key in batch.delivered if key not in gone])
            if legacy and batch.counted:
                db.executemany(COUNT_RETURN, [(*pair, key) for key, pair in batch.counted.items()])
            if batch.delayed_added:
                db.executemany(
                    "INSERT OR REPLACE INTO delayed_messages VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    batch.delayed_added.values(),
                )
            if batch.delayed_removed:
                db.executemany(
                    "DELETE FROM delayed_messages WHERE key = ?", [(key,) for key in batch.delayed_removed]
                )
            if legacy and batch.removed:
                db.executemany(DELETE_MESSAGES, key_runs(batch.removed))
            for queue_id in batch.dropped_queues:  # rare, and an index lookup when the table is empty
                db.execute("DELETE FROM messages WHERE key >= ? AND key < ?", queue_key_range(queue_id))
            if (
                batch.added
                or batch.delivered
                or batch.removed
                or batch.counted
                or batch.dropped_queues
                or deleted
            ):
                self._transactions += 1
                db.execute("INSERT OR REPLACE INTO meta VALUES ('segment_batch', ?)", (self._transactions,))
                self.segments.write(batch, deleted, self._transactions)
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise

    def close(self, clean: bool = True) -> None:
        try:
            self.segments.close()
            if self._streams is not None:
                self._streams.close()
            if clean:
                try:
                    self.db.execute("INSERT OR REPLACE INTO meta VALUES ('clean', 1)")
                except sqlite3.Error:
                    pass  # unwritable now: the next start treats this stop as a crash, the safe side
            self.db.close()
        finally:
            self._lock.close()


def _statements(script: str) -> list[str]:
    return [statement.strip() for statement in script.split(";") if statement.strip()]
