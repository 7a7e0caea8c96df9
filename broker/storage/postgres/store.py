"""The PostgreSQL store: everything the SQLite store holds (broker.storage.sqlite), in a database that
several machines can reach, so a standby can take over a failed node's durable state.

Same write rules as SQLite: one transaction per `apply(batch)` (the group commit: its confirms go out when
it is committed), message inserts, delivered marks, returns and acks each as one statement over arrays
(``unnest`` / ``= ANY``), not a statement per row; a commit waits for PostgreSQL's WAL flush
(``synchronous_commit`` is the server's: the store never lowers it). asyncpg runs on a loop of the store's
own (broker.storage.postgres.runner).

Fencing: with an epoch set (`fence`), every transaction first reads the ``warrenmq_leader`` row ``FOR KEY
SHARE`` and raises `StoreFenced` (rolling back) when a newer active node has taken the lease: a node that
lost its lease can never commit over its successor's writes, as the row's epoch cannot change while a commit
holds that lock (the epoch is a key: schema migration 2). The lease's renewal changes no key and so never
waits for a commit. With no epoch (one node, no leadership) no check runs. The sessions carry server-side
limits derived from the lease (broker.storage.postgres.sessions), so that a node cut off in the middle of a
commit cannot keep that lock, and with it its successor's takeover, past the lease.
"""

from __future__ import annotations

from collections.abc import Coroutine, Iterator
from typing import Any, TypeVar
from urllib.parse import urlsplit

import asyncpg

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
    StoreFenced,
    StoreUnreachable,
    TopicPermissionRow,
    UserRow,
    queue_key_range,
)
from broker.storage.postgres.outage import Reconnecting, is_unreachable
from broker.storage.postgres.runner import LoopThread
from broker.storage.postgres.schema import migrate
from broker.storage.postgres.sessions import DEFAULT_LEASE_S, store_settings
from broker.storage.postgres.statements import (
    COPY_FROM_ROWS,
    COPY_MESSAGES,
    COUNT_RETURNS,
    DELETE_DELAYED,
    DELETE_MESSAGES,
    DELETE_RANGE,
    DELETES,
    FENCE,
    FENCED_SQLSTATE,
    INSERT_DELAYED,
    INSERT_MESSAGES,
    MARK_DELIVERED,
    MESSAGE_COLUMNS,
    TOPOLOGY_SQL,
)
from broker.storage.postgres.streams import PgStreamDisk, PgStreams, Statement
from broker.storage.stream_files import StoredSegment

T = TypeVar("T")
CONNECT_TIMEOUT_S = 10.0
# A statement that has not answered in this long (a partitioned network, a server that stopped answering)
# fails the commit instead of holding the writer, and with it every confirm, forever.
COMMAND_TIMEOUT_S = 60.0
# After an outage the writer reconnects on each retry; a short timeout keeps each attempt short.
RECONNECT_TIMEOUT_S = 5.0


def redacted(dsn: str) -> str:
    """``postgresql://host:port/db``: the DSN without user, password or query, for logs and the ready line.
    A libpq multi-host DSN (``postgresql://u:p@a:5432,b:5432/db?target_session_attrs=read-write``, a
    replicated store) keeps its host list: ``urlsplit`` cannot read its port."""
    parts = urlsplit(dsn)
    hosts = parts.netloc.rpartition("@")[2] or "localhost"
    return f"{parts.scheme}://{hosts}{parts.path}"


class PostgresStore:
    threaded = True
    on_disk = True
    # The server flushes its WAL before a commit returns (synchronous_commit on, PostgreSQL's default).
    syncs_each_commit = True

    def __init__(self, dsn: str, lease_s: float = DEFAULT_LEASE_S) -> None:
        self.dsn = dsn
        self._server_settings = store_settings(lease_s)
        self.where = redacted(dsn)
        self.epoch: int | None = None
        self.streams = PgStreams()
        # A batch's row statements, kept while it is retried after an outage: building them moves the
        # streams' segment totals on, which must happen once per batch (the statements are idempotent).
        self._retrying: tuple[int, list[Statement], dict[int, int]] | None = None
        # Whether this run's begin() recorded "not clean": only then may its close mark the store clean. A run
        # that stops before (a standby elected whose recovery failed) must leave a crashed predecessor's
        # "not clean" in place, or the next start would trust delivered marks that crash never wrote.
        self._begun = False
        self._loop = LoopThread()
        try:
            self._writer, reader = self._run(self._connect())
            self._reader = Reconnecting(reader, self._reconnect)
        except BaseException:
            self._loop.stop()
            raise

    def _run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        """Run on the store's loop; asyncpg's and the network's errors become StorageError (the writer
        stops the broker on it, as on a failed SQLite commit), or StoreUnreachable (the server is out of
        reach: the writer retries)."""
        try:
            return self._loop.run(coroutine)
        except StorageError:
            raise
        except (
            asyncpg.PostgresError,
            asyncpg.InterfaceError,
            asyncpg.InternalClientError,
            OSError,
            TimeoutError,
        ) as error:
            # The server gone (StoreUnreachable: the writer retries the batch) or the batch refused (fatal).
            kind = StoreUnreachable if is_unreachable(error) else StorageError
            raise kind(f"PostgreSQL store {self.where}: {error!r}") from error

    async def _connect(self) -> tuple[asyncpg.Connection, asyncpg.Connection]:
        writer = await self._open(CONNECT_TIMEOUT_S)
        try:
            await migrate(writer, self.where)
            reader = await self._open(CONNECT_TIMEOUT_S)
        except BaseException:
            await writer.close()
            raise
        return writer, reader

    async def _reconnect(self) -> asyncpg.Connection:
        return await self._open(RECONNECT_TIMEOUT_S)

    async def _open(self, timeout_s: float) -> asyncpg.Connection:
        return await asyncpg.connect(
            self.dsn,
            timeout=timeout_s,
            command_timeout=COMMAND_TIMEOUT_S,
            server_settings=self._server_settings,
        )

    def fence(self, epoch: int | None) -> None:
        """From now on every commit checks that ``warrenmq_leader`` still holds ``epoch`` (None: no check)."""
        self.epoch = epoch

    # -- recovery

    async def _fetch(self, query: str, *args: Any) -> list[tuple[Any, ...]]:
        return [tuple(row) for row in await self._reader.fetch(query, *args)]

    def _rows(self, query: str, *args: Any) -> list[tuple[Any, ...]]:
        return self._run(self._fetch(query, *args))

    def _value(self, query: str, *args: Any) -> Any:
        return self._run(self._reader.fetchval(query, *args))

    def load(self) -> Definitions:
        rows = self._rows
        vhosts = rows("SELECT name, metadata FROM vhosts ORDER BY name")
        return Definitions(
            [row[0] for row in vhosts],
            [UserRow(*row) for row in rows("SELECT * FROM users ORDER BY name")],
            [ExchangeRow(*row) for row in rows("SELECT * FROM exchanges ORDER BY vhost, name")],
            [QueueRow(*row) for row in rows("SELECT * FROM queues ORDER BY id")],
            [BindingRow(*row) for row in rows("SELECT * FROM bindings ORDER BY vhost, source")],
            [
                ParameterRow(*row)
                for row in rows("SELECT * FROM runtime_parameters ORDER BY vhost, component, name")
            ],
            [PermissionRow(*row) for row in rows('SELECT * FROM permissions ORDER BY "user", vhost')],
            [TopicPermissionRow(*row) for row in rows("SELECT * FROM topic_permissions")],
            {name: metadata for name, metadata in vhosts if metadata is not None},
        )

    def messages(self, queue_id: int) -> Iterator[MessageRow]:
        query = (
            "SELECT key, exchange, routing_key, header, body, expires_at, delivered FROM messages"
            " WHERE key >= $1 AND key < $2 ORDER BY key"
        )
        return iter(self._rows(query, *queue_key_range(queue_id)))

    def max_queue_id(self) -> int:
        queues = self._value("SELECT max(id) FROM queues") or 0
        top_message = self._value("SELECT max(key) FROM messages") or 0
        stream = self._value("SELECT max(queue_id) FROM stream_segments") or 0
        return max(int(queues), int(top_message) >> KEY_SEQ_BITS, int(stream))

    def begin(self) -> bool:
        clean = self._value("SELECT value FROM meta WHERE name = 'clean'")
        # Committed before serving: a crash from now on is seen by the next start.
        self._run(self._mark_clean(0))
        self._begun = True
        return bool(clean)

    async def _mark_clean(self, value: int) -> None:
        """Fenced like a batch: a node that lost the store must not mark its successor's run clean."""
        await self._in_transaction(
            [("INSERT INTO meta VALUES ('clean', $1) ON CONFLICT (name) DO UPDATE SET value = $1", (value,))]
        )

    def delivery_counts(self, queue_id: int) -> dict[int, int]:
        query = "SELECT key, delivery_count FROM messages WHERE key >= $1 AND key < $2 AND delivery_count > 0"
        return dict(self._rows(query, *queue_key_range(queue_id)))

    def delayed_messages(self) -> Iterator[DelayedRow]:
        return iter(self._rows("SELECT * FROM delayed_messages ORDER BY due_ms, key"))

    def max_delayed_key(self) -> int:
        return int(self._value("SELECT max(key) FROM delayed_messages") or 0)

    def stream_segments(self, queue_id: int) -> Iterator[StoredSegment]:
        segments = self._rows(
            "SELECT first_offset, skipped, count, body_bytes, last_ms, counted_bytes FROM stream_segments"
            " WHERE queue_id = $1 ORDER BY first_offset",
            queue_id,
        )

        def chunks(segment_first: int) -> list[bytes]:
            query = (
                "SELECT chunk FROM stream_chunks WHERE queue_id = $1 AND segment_first = $2"
                " ORDER BY first_offset"
            )
            return [row[0] for row in self._rows(query, queue_id, segment_first)]

        return self.streams.recovered(queue_id, segments, chunks)

    def stream_disk(self, queue_id: int) -> StreamDisk | None:
        written = self.streams.written
        return PgStreamDisk(self._run, self._reader, queue_id, lambda: written.get(queue_id, 0))

    # -- writing (the writer thread)

    def apply(self, batch: Batch) -> None:
        ends = self._run(self._apply(batch))
        self.streams.written.update(ends)  # after the commit: the core reads closed segments below it

    async def _apply(self, batch: Batch) -> dict[int, int]:
        """The batch on the writer's connection, reconnected first when an outage closed it; a connection
        that failed is dropped (terminated: the server may be gone) for the next attempt."""
        await self._writable()
        try:
            ends = await self._apply_batch(batch)
        except BaseException as error:
            if is_unreachable(error):
                self._writer.terminate()
            raise
        self._retrying = None
        return ends

    async def _writable(self) -> None:
        """The writer's connection, opened again when it was lost: a standby's sessions die with the server
        they were opened on (a promotion moves the store to another one), and an elected standby's first
        write, begin()'s mark, must not fail on them."""
        if self._writer.is_closed():
            self._writer = await self._reconnect()

    def _prepared(
        self, batch: Batch, stale_streams: list[int], gone_streams: list[int]
    ) -> tuple[list[Statement], dict[int, int]]:
        """The batch's row statements, built once however often it is applied."""
        if self._retrying is not None and self._retrying[0] == batch.id:
            return self._retrying[1], self._retrying[2]
        statements, ends = self._row_statements(batch, stale_streams, gone_streams)
        self._retrying = (batch.id, statements, ends)
        return statements, ends

    async def _apply_batch(self, batch: Batch) -> dict[int, int]:
        """Round trips are the cost here (each is a thread hop and a loopback or network exchange): BEGIN
        and the fence check go as one message, and a batch of one statement with no fence (publishes
        alone, acks alone: the hot path) is its own transaction, with no BEGIN or COMMIT."""
        db = self._writer
        statements: list[Statement] | None = None
        if not batch.topology and self.epoch is None:
            statements, ends = self._prepared(batch, [], list(batch.dropped_queues))
            if len(statements) == 1:
                await _execute(db, *statements[0])
                return ends
        await self._begin_fenced()
        try:
            if statements is None:
                stale_streams: list[int] = []  # new queues' ids: a crash mid-delete may have left rows
                gone_streams = list(batch.dropped_queues)
                for op, row in batch.topology:
                    if op == "queue+":
                        stale_streams.append(row[0])
                    elif op == "vhost-":
                        ids = await db.fetch("SELECT id FROM queues WHERE vhost = $1", *row)
                        gone_streams += [r[0] for r in ids]
                    deletes = DELETES.get(op)
                    if deletes is None:
                        await db.execute(TOPOLOGY_SQL[op], *row)
                    else:
                        for statement in deletes:
                            await db.execute(statement, *row)
                statements, ends = self._prepared(batch, stale_streams, gone_streams)
            for sql, args in statements:
                await _execute(db, sql, args)
            await db.execute("COMMIT")
        except BaseException:
            await _rollback(db)
            raise
        return ends

    async def _in_transaction(self, statements: list[Statement]) -> None:
        await self._writable()
        await self._begin_fenced()
        try:
            for sql, args in statements:
                await _execute(self._writer, sql, args)
            await self._writer.execute("COMMIT")
        except BaseException:
            await _rollback(self._writer)
            raise

    async def _begin_fenced(self) -> None:
        """BEGIN, and with an epoch the fence check in the same message; StoreFenced when it fails."""
        try:
            await self._writer.execute(self._begin)
        except asyncpg.PostgresError as error:
            await _rollback(self._writer)
            if error.sqlstate == FENCED_SQLSTATE:
                raise StoreFenced(f"PostgreSQL store {self.where}: {error}") from None
            raise

    @property
    def _begin(self) -> str:
        if self.epoch is None:
            return "BEGIN"
        return "BEGIN; " + FENCE.replace("$epoch", str(int(self.epoch)))

    def _row_statements(
        self, batch: Batch, stale_streams: list[int], gone_streams: list[int]
    ) -> tuple[list[Statement], dict[int, int]]:
        """The batch after its topology, in the SQLite store's order: message inserts, delivered marks,
        returns, delayed messages, deletes, dropped queues' messages, then the streams."""
        out: list[Statement] = []
        if batch.added:
            # INSERT OR REPLACE as COPY: the rows a key already has go first (rare: a key is a queue's publish
            # position), then binary COPY, 2-3x cheaper than an unnest insert (docs/benchmarks.md).
            if len(batch.added) >= COPY_FROM_ROWS:
                out.append((DELETE_MESSAGES, (list(batch.added),)))
                out.append((COPY_MESSAGES, (list(batch.added.values()),)))
            else:
                out.append((INSERT_MESSAGES, tuple(_columns(batch.added.values(), 7))))
        if batch.delivered:
            out.append((MARK_DELIVERED, (batch.delivered,)))
        if batch.counted:
            counted = batch.counted
            pairs = counted.values()
            out.append((COUNT_RETURNS, (list(counted), [p[0] for p in pairs], [p[1] for p in pairs])))
        if batch.delayed_added:
            out.append((INSERT_DELAYED, tuple(_columns(batch.delayed_added.values(), 8))))
        if batch.delayed_removed:
            out.append((DELETE_DELAYED, (batch.delayed_removed,)))
        if batch.removed:
            out.append((DELETE_MESSAGES, (batch.removed,)))
        out.extend((DELETE_RANGE, queue_key_range(queue_id)) for queue_id in batch.dropped_queues)
        ends: dict[int, int] = {}
        if (
            stale_streams
            or gone_streams
            or batch.stream_appends
            or batch.stream_rolls
            or batch.stream_dropped
        ):
            streams, ends = self.streams.statements(
                stale_streams, batch.stream_appends, batch.stream_rolls, batch.stream_dropped, gone_streams
            )
            out.extend(streams)
        return out, ends

    def close(self, clean: bool = True) -> None:
        if self._loop.loop.is_closed():
            return  # closed already
        try:
            if clean and self._begun:
                try:
                    self._run(self._mark_clean(1))
                except StorageError:  # StoreFenced included
                    pass  # unreachable now: the next start treats this stop as a crash, the safe side
            for connection in (self._writer, self._reader.current):
                try:
                    self._loop.run(connection.close(timeout=5), timeout_s=10)
                except Exception:
                    connection.terminate()
        finally:
            self._loop.stop()


def _columns(rows: Any, width: int) -> list[list[Any]]:
    """Rows as ``width`` parallel lists, the arrays ``unnest`` turns back into rows."""
    columns: list[list[Any]] = [[] for _ in range(width)]
    for row in rows:
        for column, value in zip(columns, row, strict=True):
            column.append(value)
    return columns


async def _execute(db: asyncpg.Connection, sql: str, args: tuple[Any, ...]) -> None:
    if sql == COPY_MESSAGES:
        await db.copy_records_to_table("messages", records=args[0], columns=MESSAGE_COLUMNS)
    else:
        await db.execute(sql, *args)


async def _rollback(db: asyncpg.Connection) -> None:
    """After a failed statement: the transaction is aborted; end it so the connection serves the next batch
    (a connection that is gone has nothing to roll back)."""
    if not db.is_closed() and db.is_in_transaction():
        try:
            await db.execute("ROLLBACK")
        except (asyncpg.PostgresError, asyncpg.InterfaceError, OSError):
            pass
