"""The PostgreSQL store: everything the SQLite store holds (broker.storage.sqlite), in a database that
several machines can reach, so a standby can take over a failed node's durable state (issue #30).

Same write rules as SQLite: one transaction per `apply(batch)` (the group commit: its confirms go out when
it is committed), message inserts, delivered marks, returns and acks each as one statement over arrays
(``unnest`` / ``= ANY``), not a statement per row; a commit waits for PostgreSQL's WAL flush
(``synchronous_commit`` is the server's: the store never lowers it). asyncpg runs on a loop of the store's
own (broker.storage.postgres.runner).

Fencing: with an epoch set (`fence`), every transaction first reads the ``warrenmq_leader`` row ``FOR
SHARE`` and raises `StoreFenced` (rolling back) when a newer active node has taken the lease: a node that
lost its lease can never commit over its successor's writes, as the lease row cannot change while a commit
holds its share lock. With no epoch (one node, no leadership) no check runs.
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
    TopicPermissionRow,
    UserRow,
    queue_key_range,
)
from broker.storage.postgres.runner import LoopThread
from broker.storage.postgres.schema import migrate
from broker.storage.postgres.streams import PgStreamDisk, PgStreams, Statement
from broker.storage.stream_files import StoredSegment

T = TypeVar("T")
CONNECT_TIMEOUT_S = 10.0
# A statement that has not answered in this long (a partitioned network, a server that stopped answering)
# fails the commit instead of holding the writer, and with it every confirm, forever.
COMMAND_TIMEOUT_S = 60.0

_TOPOLOGY_SQL = {
    "vhost+": "INSERT INTO vhosts (name) VALUES ($1) ON CONFLICT DO NOTHING",
    "vhost~": "UPDATE vhosts SET metadata = $2 WHERE name = $1",
    "user+": (
        "INSERT INTO users VALUES ($1, $2, $3, $4, $5) ON CONFLICT (name) DO UPDATE SET"
        " password = excluded.password, password_hash = excluded.password_hash,"
        " algorithm = excluded.algorithm, tags = excluded.tags"
    ),
    "permission+": (
        'INSERT INTO permissions VALUES ($1, $2, $3, $4, $5) ON CONFLICT ("user", vhost) DO UPDATE SET'
        " configure = excluded.configure, write = excluded.write, read = excluded.read"
    ),
    "permission-": 'DELETE FROM permissions WHERE "user" = $1 AND vhost = $2',
    "topic_permission+": (
        "INSERT INTO topic_permissions VALUES ($1, $2, $3, $4, $5)"
        ' ON CONFLICT ("user", vhost, exchange) DO UPDATE SET write = excluded.write, read = excluded.read'
    ),
    "topic_permission-": 'DELETE FROM topic_permissions WHERE "user" = $1 AND vhost = $2 AND exchange = $3',
    "exchange+": (
        "INSERT INTO exchanges VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (vhost, name) DO UPDATE SET"
        " type = excluded.type, auto_delete = excluded.auto_delete, internal = excluded.internal,"
        " arguments = excluded.arguments"
    ),
    "queue+": (
        "INSERT INTO queues VALUES ($1, $2, $3, $4, $5, 0) ON CONFLICT (id) DO UPDATE SET"
        " vhost = excluded.vhost, name = excluded.name, auto_delete = excluded.auto_delete,"
        " arguments = excluded.arguments, had_consumer = 0"
    ),
    "queue~": "UPDATE queues SET had_consumer = 1 WHERE id = $1",
    "parameter+": (
        "INSERT INTO runtime_parameters VALUES ($1, $2, $3, $4)"
        " ON CONFLICT (vhost, component, name) DO UPDATE SET value = excluded.value"
    ),
    "parameter-": "DELETE FROM runtime_parameters WHERE vhost = $1 AND component = $2 AND name = $3",
    "binding+": "INSERT INTO bindings VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING",
    "binding-": (
        "DELETE FROM bindings WHERE vhost = $1 AND source = $2 AND destination_type = $3"
        " AND destination = $4 AND routing_key = $5 AND arguments = $6"
    ),
}
_DELETES = {
    "exchange-": (
        "DELETE FROM delayed_messages WHERE vhost = $1 AND holder = $2",  # the plugin drops them with it
        "DELETE FROM exchanges WHERE vhost = $1 AND name = $2",
    ),
    "queue-": (
        f"DELETE FROM messages WHERE key >= $1::bigint << {KEY_SEQ_BITS}"
        f" AND key < ($1::bigint + 1) << {KEY_SEQ_BITS}",
        "DELETE FROM bindings WHERE destination_type = 'queue'"
        " AND (vhost, destination) IN (SELECT vhost, name FROM queues WHERE id = $1)",
        "DELETE FROM queues WHERE id = $1",
    ),
    "vhost-": (
        f"DELETE FROM messages WHERE key >> {KEY_SEQ_BITS} IN (SELECT id FROM queues WHERE vhost = $1)",
        "DELETE FROM queues WHERE vhost = $1",
        "DELETE FROM bindings WHERE vhost = $1",
        "DELETE FROM exchanges WHERE vhost = $1",
        "DELETE FROM delayed_messages WHERE vhost = $1",
        "DELETE FROM permissions WHERE vhost = $1",
        "DELETE FROM topic_permissions WHERE vhost = $1",
        "DELETE FROM vhosts WHERE name = $1",
        "DELETE FROM runtime_parameters WHERE vhost = $1",
    ),
    "user-": (
        'DELETE FROM permissions WHERE "user" = $1',
        'DELETE FROM topic_permissions WHERE "user" = $1',
        "DELETE FROM users WHERE name = $1",
    ),
}
# The hot path: one statement per kind of change, whatever the batch's size.
_INSERT_MESSAGES = (
    "INSERT INTO messages (key, exchange, routing_key, header, body, expires_at, delivered)"
    " SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[], $4::bytea[], $5::bytea[], $6::bigint[],"
    " $7::int[]) ON CONFLICT (key) DO UPDATE SET exchange = excluded.exchange,"
    " routing_key = excluded.routing_key, header = excluded.header, body = excluded.body,"
    " expires_at = excluded.expires_at, delivered = excluded.delivered, delivery_count = 0"
)
_MARK_DELIVERED = "UPDATE messages SET delivered = 1 WHERE key = ANY($1::bigint[])"
_COUNT_RETURNS = (
    "UPDATE messages AS m SET delivery_count = r.count, delivered = r.delivered"
    " FROM unnest($1::bigint[], $2::int[], $3::int[]) AS r(key, count, delivered) WHERE m.key = r.key"
)
_DELETE_MESSAGES = "DELETE FROM messages WHERE key = ANY($1::bigint[])"
_INSERT_DELAYED = (
    "INSERT INTO delayed_messages SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[], $4::bigint[],"
    " $5::text[], $6::text[], $7::bytea[], $8::bytea[]) ON CONFLICT (key) DO UPDATE SET"
    " vhost = excluded.vhost, holder = excluded.holder, due_ms = excluded.due_ms,"
    " exchange = excluded.exchange, routing_key = excluded.routing_key, header = excluded.header,"
    " body = excluded.body"
)
_DELETE_DELAYED = "DELETE FROM delayed_messages WHERE key = ANY($1::bigint[])"
_DELETE_RANGE = "DELETE FROM messages WHERE key >= $1 AND key < $2"
_LEADER_EPOCH = "SELECT epoch FROM warrenmq_leader WHERE id = 1 FOR SHARE"


def redacted(dsn: str) -> str:
    """``postgresql://host:port/db``: the DSN without user and password, for logs and the ready line."""
    parts = urlsplit(dsn)
    host = parts.hostname or "localhost"
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{host}{port}{parts.path}"


class PostgresStore:
    threaded = True

    def __init__(self, dsn: str) -> None:
        self.dsn = dsn
        self.where = redacted(dsn)
        self.epoch: int | None = None
        self.streams = PgStreams()
        self._loop = LoopThread()
        try:
            self._writer, self._reader = self._run(self._connect())
        except BaseException:
            self._loop.stop()
            raise

    def _run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        """Run on the store's loop; asyncpg's and the network's errors become StorageError (the writer
        stops the broker on it, as on a failed SQLite commit)."""
        try:
            return self._loop.run(coroutine)
        except StorageError:
            raise
        except (asyncpg.PostgresError, asyncpg.InterfaceError, OSError, TimeoutError) as error:
            raise StorageError(f"PostgreSQL store {self.where}: {error!r}") from error

    async def _connect(self) -> tuple[asyncpg.Connection, asyncpg.Connection]:
        writer = await asyncpg.connect(self.dsn, timeout=CONNECT_TIMEOUT_S, command_timeout=COMMAND_TIMEOUT_S)
        try:
            await migrate(writer, self.where)
            reader = await asyncpg.connect(
                self.dsn, timeout=CONNECT_TIMEOUT_S, command_timeout=COMMAND_TIMEOUT_S
            )
        except BaseException:
            await writer.close()
            raise
        return writer, reader

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
        self._run(  # committed before serving: a crash from now on is seen by the next start
            self._writer.execute(
                "INSERT INTO meta VALUES ('clean', 0) ON CONFLICT (name) DO UPDATE SET value = 0"
            )
        )
        return bool(clean)

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
        db = self._writer
        async with db.transaction():
            if self.epoch is not None:
                held = await db.fetchval(_LEADER_EPOCH)
                if held != self.epoch:
                    raise StoreFenced(
                        f"PostgreSQL store {self.where}: epoch {held} holds the store, this node's epoch"
                        f" {self.epoch} is stale"
                    )
            stale_streams: list[int] = []  # new queues' ids: a crash mid-delete may have left their rows
            gone_streams = list(batch.dropped_queues)
            for op, row in batch.topology:
                if op == "queue+":
                    stale_streams.append(row[0])
                elif op == "vhost-":
                    ids = await db.fetch("SELECT id FROM queues WHERE vhost = $1", *row)
                    gone_streams += [r[0] for r in ids]
                deletes = _DELETES.get(op)
                if deletes is None:
                    await db.execute(_TOPOLOGY_SQL[op], *row)
                else:
                    for statement in deletes:
                        await db.execute(statement, *row)
            if batch.added:
                await db.execute(_INSERT_MESSAGES, *_columns(batch.added.values(), 7))
            if batch.delivered:
                await db.execute(_MARK_DELIVERED, batch.delivered)
            if batch.counted:
                counted = batch.counted
                await db.execute(
                    _COUNT_RETURNS,
                    list(counted),
                    [pair[0] for pair in counted.values()],
                    [pair[1] for pair in counted.values()],
                )
            if batch.delayed_added:
                await db.execute(_INSERT_DELAYED, *_columns(batch.delayed_added.values(), 8))
            if batch.delayed_removed:
                await db.execute(_DELETE_DELAYED, batch.delayed_removed)
            if batch.removed:
                await db.execute(_DELETE_MESSAGES, batch.removed)
            for queue_id in batch.dropped_queues:
                await db.execute(_DELETE_RANGE, *queue_key_range(queue_id))
            ends: dict[int, int] = {}
            if (
                stale_streams
                or gone_streams
                or batch.stream_appends
                or batch.stream_rolls
                or batch.stream_dropped
            ):
                statements, ends = self.streams.statements(
                    stale_streams,
                    batch.stream_appends,
                    batch.stream_rolls,
                    batch.stream_dropped,
                    gone_streams,
                )
                await _execute(db, statements)
        return ends

    def close(self, clean: bool = True) -> None:
        if self._loop.loop.is_closed():
            return  # closed already
        try:
            if clean:
                try:
                    self._run(
                        self._writer.execute(
                            "INSERT INTO meta VALUES ('clean', 1) ON CONFLICT (name) DO UPDATE SET value = 1"
                        )
                    )
                except StorageError:
                    pass  # unreachable now: the next start treats this stop as a crash, the safe side
            for connection in (self._writer, self._reader):
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


async def _execute(db: asyncpg.Connection, statements: list[Statement]) -> None:
    for sql, args in statements:
        await db.execute(sql, *args)
