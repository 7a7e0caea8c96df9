"""Stream logs in PostgreSQL: the `broker.storage.stream_files` layout as rows, so a standby on another
machine reads the same log.

``stream_chunks`` holds one row per stream per commit: the chunk encoded as in a segment file
(`encode_chunk`: crc, first offset, timestamps, records), keyed by (queue id, first offset) and tagged with
its segment's first offset. ``stream_segments`` holds each segment's totals, what a file's index seal holds,
so start-up reads a closed segment's row only and the core reads its entries back through `PgStreamDisk` when
a consumer needs them. Retention deletes a segment's rows as the file store deletes its files.

The writer side (`PgStreams`) only builds the statements' arguments; the store runs them inside the batch's
transaction, and ``written`` moves only after the commit (the core reads closed segments below it).
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Iterator
from typing import TYPE_CHECKING, Any, Protocol

from broker.core.model.message import Message
from broker.core.streams.stream_file_bytes import EntrySizer
from broker.core.streams.stream_log import ClosedSegmentMeta
from broker.storage.stored_message import message_of
from broker.storage.stream_files import (
    SegmentTotals,
    StoredSegment,
    StreamRecord,
    StreamRow,
    decode_chunks,
    encode_chunk,
    snapshot_offsets,
)

if TYPE_CHECKING:
    pass

INSERT_CHUNKS = (
    "INSERT INTO stream_chunks (queue_id, first_offset, segment_first, first_ms, count, chunk)"
    " SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::bigint[], $4::bigint[], $5::int[], $6::bytea[])"
    " ON CONFLICT (queue_id, first_offset) DO UPDATE SET segment_first = excluded.segment_first,"
    " first_ms = excluded.first_ms, count = excluded.count, chunk = excluded.chunk"
)
UPSERT_SEGMENT = (
    "INSERT INTO stream_segments VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (queue_id, first_offset)"
    " DO UPDATE SET skipped = excluded.skipped, count = excluded.count, body_bytes = excluded.body_bytes,"
    " last_ms = excluded.last_ms, counted_bytes = excluded.counted_bytes"
)
DROP_SEGMENT = (
    "DELETE FROM stream_chunks WHERE queue_id = $1 AND segment_first = $2",
    "DELETE FROM stream_segments WHERE queue_id = $1 AND first_offset = $2",
)
DROP_STREAM = (
    "DELETE FROM stream_chunks WHERE queue_id = $1",
    "DELETE FROM stream_segments WHERE queue_id = $1",
)
# Closed-segment reads: the chunks from ``start`` on, as many as fit in ``max_bytes`` (at least one).
_READ_CHUNKS = (
    "SELECT first_offset, count, chunk FROM ("
    " SELECT first_offset, count, chunk, sum(octet_length(chunk)) OVER (ORDER BY first_offset)"
    " - octet_length(chunk) AS before FROM stream_chunks"
    " WHERE queue_id = $1 AND segment_first = $2 AND first_offset >= $3 ORDER BY first_offset LIMIT 256"
    ") AS next WHERE before < $4 ORDER BY first_offset"
)
_CHUNK_AT_OFFSET = (
    "SELECT coalesce(max(first_offset), $2) FROM stream_chunks"
    " WHERE queue_id = $1 AND segment_first = $2 AND first_offset <= $3"
)
# Appends are in time order: the record at or after a timestamp is in the last chunk that starts before it
# or in the one after.
_CHUNKS_AT_TIMESTAMP = (
    "SELECT chunk FROM stream_chunks WHERE queue_id = $1 AND segment_first = $2 AND first_offset >= coalesce("
    " (SELECT max(first_offset) FROM stream_chunks WHERE queue_id = $1 AND segment_first = $2"
    " AND first_ms < $3), $2) ORDER BY first_offset LIMIT 2"
)

Statement = tuple[str, tuple[Any, ...]]


class Reader(Protocol):
    """The store's read connection (an asyncpg connection, or one opened again after an outage)."""

    async def fetch(self, query: str, *args: Any) -> list[Any]: ...

    async def fetchval(self, query: str, *args: Any) -> Any: ...


class PgStreams:
    """The writer thread's view: per stream its open segment's totals; ``written`` as in StreamFiles."""

    def __init__(self) -> None:
        self.written: dict[int, int] = {}
        self._tails: dict[int, SegmentTotals] = {}
        self.sizer = EntrySizer()

    def statements(
        self,
        stale: list[int],
        appends: list[StreamRow],
        rolls: list[tuple[int, int]],
        dropped: list[tuple[int, int]],
        gone: list[int],
    ) -> tuple[list[Statement], dict[int, int]]:
        """A batch's stream writes in the file store's order (stale streams, appends, rolls, retention,
        deleted streams), and the ``written`` marks to publish once they are committed."""
        out: list[Statement] = []
        ends: dict[int, int] = {}
        for queue_id in stale:
            self._forget(queue_id, ends)
            out.extend((sql, (queue_id,)) for sql in DROP_STREAM)
        if appends:
            out.extend(self._appends(appends, ends))
        for queue_id, first in rolls:
            tail = self._tails.get(queue_id)
            if tail is None or tail.first_offset < first:
                tail = self._tails[queue_id] = SegmentTotals(first)
                out.append((UPSERT_SEGMENT, _segment_row(queue_id, tail)))
        for queue_id, first in dropped:
            tail = self._tails.get(queue_id)
            if tail is not None and tail.first_offset == first:
                del self._tails[queue_id]
            out.extend((sql, (queue_id, first)) for sql in DROP_SEGMENT)
        for queue_id in gone:
            self._forget(queue_id, ends)
            out.extend((sql, (queue_id,)) for sql in DROP_STREAM)
        return out, ends

    def _forget(self, queue_id: int, ends: dict[int, int]) -> None:
        self._tails.pop(queue_id, None)
        self.written.pop(queue_id, None)
        ends.pop(queue_id, None)

    def _appends(self, rows: list[StreamRow], ends: dict[int, int]) -> list[Statement]:
        """One chunk per run of rows of the same stream segment (as the files get), inserted in one
        statement, and each touched segment's totals."""
        columns: list[list[Any]] = [[], [], [], [], [], []]
        touched: dict[tuple[int, int], SegmentTotals] = {}
        run: list[StreamRecord] = []
        key: tuple[int, int] | None = None

        def close_run(queue_id: int, segment_first: int) -> None:
            tail = self._tails.get(queue_id)
            if tail is None or tail.first_offset != segment_first:
                tail = self._tails[queue_id] = SegmentTotals(segment_first)
            tail.add(run, self.sizer)
            touched[(queue_id, segment_first)] = tail
            for column, value in zip(
                columns,
                (queue_id, run[0][0], segment_first, run[0][1], len(run), encode_chunk(run)),
                strict=True,
            ):
                column.append(value)

        for row in rows:
            row_key = (row[0], row[1])
            if row_key != key and run and key is not None:
                close_run(*key)
                run = []
            key = row_key
            run.append(row[2:])
            ends[row[0]] = row[2] + 1
        if run and key is not None:
            close_run(*key)
        out: list[Statement] = [(INSERT_CHUNKS, tuple(columns))]
        out.extend((UPSERT_SEGMENT, _segment_row(q, totals)) for (q, _first), totals in touched.items())
        return out

    def recovered(
        self, queue_id: int, segments: list[tuple[Any, ...]], chunks: Callable[[int], list[bytes]]
    ) -> Iterator[StoredSegment]:
        """A stream's segments at start-up from its ``stream_segments`` rows: a closed one by its totals,
        the open one (and a closed one without entries, the first) with its records read back."""
        last = len(segments) - 1
        for number, (first, skipped, count, body_bytes, last_ms, counted_bytes) in enumerate(segments):
            if number < last and count:
                self.written[queue_id] = first + skipped + count
                yield first, skipped, ClosedSegmentMeta(count, body_bytes, last_ms, counted_bytes, skipped)
                continue
            records = [record for data in chunks(first) for record in _records(data)]
            if records:
                self.written[queue_id] = records[-1][0] + 1
            if number == last:
                tail = self._tails[queue_id] = SegmentTotals(first)
                tail.add(records, self.sizer)
            if records or number in (0, last):
                yield first, snapshot_offsets(first, records), records


def _segment_row(queue_id: int, totals: SegmentTotals) -> tuple[int, ...]:
    return (
        queue_id,
        totals.first_offset,
        totals.skipped,
        totals.count,
        totals.body_bytes,
        totals.last_ms,
        totals.counted_bytes,
    )


def _records(data: bytes) -> list[StreamRecord]:
    chunks, _valid = decode_chunks(data)
    return [record for chunk in chunks for record in chunk[3]]


class PgStreamDisk:
    """One stream's closed segments as the core reads them (`broker.core.queues.stream_disk.StreamDisk`),
    from ``stream_chunks``. ``position`` is the first offset of the next chunk to read."""

    __slots__ = ("_connection", "_queue_id", "_run", "written")

    def __init__(
        self,
        run: Callable[[Coroutine[Any, Any, Any]], Any],
        connection: Reader,
        queue_id: int,
        written: Callable[[], int],
    ) -> None:
        self._run = run
        self._connection = connection
        self._queue_id = queue_id
        self.written = written

    def read(
        self, segment_first: int, offset: int, position: int, max_bytes: int
    ) -> tuple[list[Message], int]:
        rows: list[tuple[int, int, bytes]] = self._run(self._read(segment_first, offset, position, max_bytes))
        messages: list[Message] = []
        for first_offset, count, data in rows:
            for entry_offset, _ts, exchange, routing_key, header, body in _records(data):
                if entry_offset >= offset:
                    messages.append(message_of(exchange, routing_key, header, body))
            position = first_offset + count
        return messages, max(position, offset)

    async def _read(
        self, segment_first: int, offset: int, position: int, max_bytes: int
    ) -> list[tuple[int, int, bytes]]:
        connection, queue_id = self._connection, self._queue_id
        if position < 0:
            position = await connection.fetchval(_CHUNK_AT_OFFSET, queue_id, segment_first, offset)
        rows = await connection.fetch(_READ_CHUNKS, queue_id, segment_first, position, max_bytes)
        return [(row[0], row[1], row[2]) for row in rows]

    def offset_at(self, segment_first: int, timestamp_ms: int) -> int | None:
        chunks: list[bytes] = self._run(self._chunks_at(segment_first, timestamp_ms))
        for data in chunks:
            for record in _records(data):
                if record[1] >= timestamp_ms:
                    return record[0]
        return None

    async def _chunks_at(self, segment_first: int, timestamp_ms: int) -> list[bytes]:
        rows = await self._connection.fetch(_CHUNKS_AT_TIMESTAMP, self._queue_id, segment_first, timestamp_ms)
        return [row[0] for row in rows]
