"""PostgresStore on its own: its versioned schema, the databases it refuses, its clean-stop mark, the fencing
hook the leadership work relies on, and stream logs kept as rows, read back as SQLite's segment
files are (the same batches, the same segments and reads)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import asyncpg
import pytest

from broker.storage.base import Batch, StorageError, StoreFenced, StoreUnreachable, message_key
from broker.storage.memory import MemoryStore
from broker.storage.postgres.schema import SCHEMA_VERSION
from broker.storage.postgres.statements import COPY_FROM_ROWS
from broker.storage.postgres.store import PostgresStore, redacted
from broker.storage.sqlite import SqliteStore
from broker.storage.stream_files import StreamRow
from tests.ports import free_port
from tests.postgres.cluster import PostgresCluster
from tests.unit.storage.helpers import abandon, make_message

HEADER = make_message("ex", "rk", b"", delivery_mode=2, content_type="text/plain").header_payload
ROW = (message_key(1, 1), "", "q", HEADER, b"body", None, 0)


@pytest.fixture
def database(postgres_cluster: PostgresCluster) -> tuple[PostgresCluster, str, str]:
    dsn = postgres_cluster.create_database()
    return postgres_cluster, dsn, dsn.rsplit("/", 1)[1]


@pytest.fixture
def store(database: tuple[PostgresCluster, str, str]) -> Iterator[PostgresStore]:
    opened = PostgresStore(database[1])
    yield opened
    opened.close()  # a second close does nothing


def _declare(batch_id: int = 1) -> Batch:
    return Batch(batch_id, topology=[("queue+", (1, "/", "q", 0, None))], added={ROW[0]: ROW})


def test_a_new_database_gets_the_schema_and_its_version_once(
    database: tuple[PostgresCluster, str, str],
) -> None:
    cluster, dsn, name = database
    PostgresStore(dsn).close()
    PostgresStore(dsn).close()  # reopened: nothing applied twice
    versions = cluster.psql("SELECT version FROM warrenmq_schema ORDER BY version", name).split()
    assert versions == [str(step) for step in range(1, SCHEMA_VERSION + 1)]  # one row per migration
    # The lease row's table, for broker/ha, with the agreed shape.
    columns = cluster.psql(
        "SELECT column_name, data_type FROM information_schema.columns WHERE table_name = 'warrenmq_leader'"
        " ORDER BY ordinal_position",
        name,
    )
    assert columns.split() == [
        "id|smallint", "epoch|bigint", "holder|text", "lease_until|timestamp", "with", "time", "zone",
    ]  # fmt: skip


def test_a_newer_schema_is_refused(database: tuple[PostgresCluster, str, str]) -> None:
    cluster, dsn, name = database
    PostgresStore(dsn).close()
    cluster.psql(f"INSERT INTO warrenmq_schema VALUES ({SCHEMA_VERSION + 1})", name)
    with pytest.raises(StorageError, match="newer than this WarrenMQ"):
        PostgresStore(dsn)


def test_a_foreign_database_is_refused_and_left_untouched(database: tuple[PostgresCluster, str, str]) -> None:
    cluster, dsn, name = database
    cluster.psql("CREATE TABLE messages (id int)", name)
    with pytest.raises(StorageError, match="not a WarrenMQ store"):
        PostgresStore(dsn)
    tables = cluster.psql("SELECT tablename FROM pg_tables WHERE schemaname = 'public'", name).split()
    assert tables == ["messages"]  # the version table went with the rolled-back migration


def test_an_unreachable_server_is_a_storage_error_without_the_password() -> None:
    dsn = "postgresql://user:secret@127.0.0.1:1/nowhere"
    with pytest.raises(StorageError) as refused:
        PostgresStore(dsn)
    assert "secret" not in str(refused.value)
    assert redacted(dsn) == "postgresql://127.0.0.1:1/nowhere"
    # A replicated store's multi-host DSN: its hosts, still no password (urlsplit cannot read its port).
    many = "postgresql://user:secret@a:5432,b:5433/db?target_session_attrs=read-write"
    assert redacted(many) == "postgresql://a:5432,b:5433/db"


def test_a_multi_host_dsn_opens_the_store_on_the_host_that_takes_writes(
    database: tuple[PostgresCluster, str, str],
) -> None:
    """libpq's multi-host DSN as a replicated store is given: the first host is down (as a lost primary is),
    target_session_attrs=read-write picks the one that accepts writes."""
    cluster, _dsn, name = database
    where = f"127.0.0.1:{free_port()},{cluster.host}:{cluster.port}"
    dsn = f"postgresql://{cluster.user}:{cluster.password}@{where}/{name}?target_session_attrs=read-write"
    store = PostgresStore(dsn)
    try:
        store.apply(_declare())
        assert [row.name for row in store.load().queues] == ["q"]
    finally:
        store.close()


def test_the_clean_mark_is_set_by_a_clean_close_only(database: tuple[PostgresCluster, str, str]) -> None:
    dsn = database[1]
    first = PostgresStore(dsn)
    assert first.begin() is False  # a new store: nothing proves a clean stop
    first.close(clean=True)
    second = PostgresStore(dsn)
    assert second.begin() is True
    abandon(second)  # kill -9: begin() recorded "not clean" durably
    third = PostgresStore(dsn)
    assert third.begin() is False
    third.close(clean=False)
    fourth = PostgresStore(dsn)
    assert fourth.begin() is False
    fourth.close()


def test_without_an_epoch_no_lease_row_is_needed(store: PostgresStore) -> None:
    store.apply(_declare())
    assert list(store.messages(1)) == [ROW]


def test_a_stale_epoch_is_fenced_and_its_batch_rolled_back(
    database: tuple[PostgresCluster, str, str], store: PostgresStore
) -> None:
    cluster, _dsn, name = database
    cluster.psql("INSERT INTO warrenmq_leader VALUES (1, 7, 'node-b', now() + interval '3 seconds')", name)
    store.fence(7)
    store.apply(_declare())
    store.fence(6)  # node-b took the lease with epoch 7: this node's 6 is stale
    with pytest.raises(StoreFenced, match="epoch 7 holds the store"):
        store.apply(Batch(2, removed=[ROW[0]], topology=[("vhost+", ("v2",))]))
    assert list(store.messages(1)) == [ROW]  # nothing of the fenced batch
    assert store.load().vhosts == []
    store.fence(7)
    store.apply(Batch(3, removed=[ROW[0]]))  # the connection is still usable after the rollback
    assert list(store.messages(1)) == []


def test_no_lease_row_fences_a_node_that_has_an_epoch(store: PostgresStore) -> None:
    store.fence(1)
    with pytest.raises(StoreFenced):
        store.apply(_declare())


def test_a_failed_commit_raises_storage_error_and_keeps_nothing(store: PostgresStore) -> None:
    bad = Batch(1, topology=[("queue+", (1, "/", "q", 0, None)), ("queue+", (2, "/", "q", 0, None))])
    bad.added[ROW[0]] = ROW
    with pytest.raises(StorageError):
        store.apply(bad)  # (vhost, name) is unique: the second row violates it
    assert store.load().queues == []
    assert list(store.messages(1)) == []


# -- streams: the same batches into SQLite's segment files and PostgreSQL's rows


def _stream_rows(queue_id: int, segment_first: int, first: int, count: int) -> list[StreamRow]:
    return [
        (queue_id, segment_first, offset, 1000 + 10 * offset, "ex", f"rk{offset}", HEADER, b"b%d" % offset)
        for offset in range(first, first + count)
    ]


STREAM_BATCHES = [
    Batch(1, topology=[("queue+", (5, "/", "s", 0, None))], stream_appends=_stream_rows(5, 0, 0, 3)),
    Batch(2, stream_appends=_stream_rows(5, 0, 3, 2) + _stream_rows(5, 5, 6, 2)),  # rolls within a commit
    Batch(3, stream_rolls=[(5, 8)]),  # a roll before its first entry
    Batch(4, stream_appends=_stream_rows(5, 8, 9, 4)),
    Batch(5, stream_rolls=[(5, 13)], stream_appends=_stream_rows(5, 13, 14, 1)),
    Batch(6, stream_dropped=[(5, 0)]),  # retention
]


def test_stream_segments_and_reads_are_those_of_the_segment_files(
    tmp_path: Path, store: PostgresStore
) -> None:
    sqlite = SqliteStore(tmp_path, fsync="never")
    for batch in STREAM_BATCHES:
        sqlite.apply(batch)
        store.apply(batch)
    for durable in (sqlite, store):
        disk = durable.stream_disk(5)
        assert disk is not None
        assert disk.written() == 15
    sqlite.close()
    dsn = store.dsn
    store.close()
    sqlite = SqliteStore(tmp_path, fsync="never")
    postgres = PostgresStore(dsn)
    try:
        assert list(postgres.stream_segments(5)) == list(sqlite.stream_segments(5))
        assert postgres.max_queue_id() == sqlite.max_queue_id() == 5
        files, rows = sqlite.stream_disk(5), postgres.stream_disk(5)
        assert files is not None
        assert rows is not None
        assert rows.written() == files.written() == 15
        for segment_first, offset in ((5, 6), (5, 7), (8, 11)):
            from_files, _ = files.read(segment_first, offset, -1, 1 << 20)
            from_rows, position = rows.read(segment_first, offset, -1, 1 << 20)
            assert [m.body for m in from_rows] == [m.body for m in from_files]
            assert [m.header_payload for m in from_rows] == [m.header_payload for m in from_files]
            # Reading on from where the last read ended gives the rest of the segment, nothing twice.
            rest, _ = rows.read(segment_first, position, position, 1 << 20)
            assert rest == []
        for timestamp in (1000 + 10 * 9, 1000 + 10 * 9 + 5, 1000 + 10 * 12, 1000 + 10 * 13):
            assert rows.offset_at(8, timestamp) == files.offset_at(8, timestamp)
    finally:
        sqlite.close()
        postgres.close()


def test_a_stream_read_is_bounded_by_max_bytes(store: PostgresStore) -> None:
    store.apply(Batch(1, topology=[("queue+", (5, "/", "s", 0, None))]))
    for number in range(6):  # six chunks of two entries each
        store.apply(Batch(2 + number, stream_appends=_stream_rows(5, 0, 2 * number, 2)))
    disk = store.stream_disk(5)
    assert disk is not None
    first, position = disk.read(0, 0, -1, 1)  # at least one chunk, however small the budget
    assert [m.body for m in first] == [b"b0", b"b1"]
    following, position = disk.read(0, 2, position, 1)
    assert [m.body for m in following] == [b"b2", b"b3"]
    rest, _ = disk.read(0, 5, -1, 1 << 20)  # attached mid-chunk: the entries before the offset are skipped
    assert [m.body for m in rest] == [b"b%d" % n for n in range(5, 12)]


def test_deleting_a_stream_queue_deletes_its_rows(
    database: tuple[PostgresCluster, str, str], store: PostgresStore
) -> None:
    cluster, _dsn, name = database
    for batch in STREAM_BATCHES[:2]:
        store.apply(batch)
    store.apply(Batch(7, topology=[("queue-", (5,))], dropped_queues=[5]))
    assert cluster.psql("SELECT count(*) FROM stream_chunks", name).strip() == "0"
    assert cluster.psql("SELECT count(*) FROM stream_segments", name).strip() == "0"
    assert list(store.stream_segments(5)) == []


def test_a_store_outage_fails_the_commit_and_a_restarted_server_has_every_committed_batch(
    database: tuple[PostgresCluster, str, str], store: PostgresStore
) -> None:
    cluster, dsn, _name = database
    store.apply(_declare())
    cluster.stop()  # "fast": PostgreSQL closes every connection
    try:
        with pytest.raises(StorageError, match=r"postgresql://127\.0\.0\.1"):
            store.apply(Batch(2, removed=[ROW[0]]))  # the writer reports it; the node stops
        with pytest.raises(StorageError):
            PostgresStore(dsn)  # nothing to connect to
    finally:
        cluster.start()
    store.close()  # the clean mark cannot be written: the next start counts this stop as a crash
    reopened = PostgresStore(dsn)
    try:
        assert reopened.begin() is False
        assert list(reopened.messages(1)) == [ROW]  # the failed batch left nothing
    finally:
        reopened.close()


@pytest.mark.parametrize("count", [COPY_FROM_ROWS - 1, COPY_FROM_ROWS, 500])
def test_a_batch_of_any_size_replaces_the_rows_its_keys_had(store: PostgresStore, count: int) -> None:
    """Small batches upsert, large ones go in with COPY after a delete: both as SQLite's INSERT OR REPLACE,
    which resets the delivery count."""
    memory = MemoryStore()
    old = (message_key(1, 3), "", "q", HEADER, b"old", None, 1)
    batches = [
        _declare(),
        Batch(2, added={old[0]: old}, counted={old[0]: (4, 1)}),
        Batch(
            3,
            added={
                message_key(1, seq): (message_key(1, seq), "x", "k", HEADER, b"m%d" % seq, 1_000 + seq, 0)
                for seq in range(2, 2 + count)
            },
        ),
    ]
    for batch in batches:
        memory.apply(batch)
        store.apply(batch)
    assert list(store.messages(1)) == list(memory.messages(1))
    assert len(list(store.messages(1))) == count + 1
    assert store.delivery_counts(1) == memory.delivery_counts(1) == {}


def test_a_fenced_node_cannot_mark_its_successors_run_clean(
    database: tuple[PostgresCluster, str, str], store: PostgresStore
) -> None:
    cluster, dsn, name = database
    cluster.psql("INSERT INTO warrenmq_leader VALUES (1, 2, 'node-b', now())", name)
    store.fence(2)
    store.begin()  # the successor's run: not clean until it stops
    store.fence(1)  # this node's view: an older epoch
    store.close(clean=True)
    reopened = PostgresStore(dsn)
    try:
        assert reopened.begin() is False
    finally:
        reopened.close()


# -- losing the database: the writer applies a batch again after an outage


def _snapshot(cluster: PostgresCluster, name: str) -> str:
    tables = ("queues", "exchanges", "bindings", "messages", "stream_chunks", "stream_segments")
    return "\n".join(cluster.psql(f"SELECT * FROM {table} ORDER BY 1, 2", name) for table in tables)


def test_applying_a_committed_batch_again_changes_nothing(database: tuple[PostgresCluster, str, str]) -> None:
    """The writer retries a batch whose commit's answer was lost with the connection: it may already be
    committed. Every kind of row a batch writes (topology upserts, messages by key, delivered marks,
    returns, removals, stream chunks and segment totals) must come out the same when it is applied twice."""
    cluster, dsn, name = database
    removed = (message_key(1, 2), "", "q", HEADER, b"gone", None, 0)
    batches = [
        Batch(
            1,
            topology=[
                ("queue+", (1, "/", "q", 0, None)),
                ("exchange+", ("/", "x", "direct", 0, 0, None)),
                ("binding+", ("/", "x", "queue", "q", "k", "[]")),
            ],
            added={ROW[0]: ROW, removed[0]: removed},
        ),
        *STREAM_BATCHES[:2],
        Batch(7, delivered=[ROW[0]], counted={ROW[0]: (3, 0)}, removed=[removed[0]]),
        Batch(
            8,
            added={
                message_key(1, seq): (message_key(1, seq), "", "q", HEADER, b"c", None, 0)
                for seq in range(3, 3 + COPY_FROM_ROWS)
            },
        ),
    ]
    once, twice = PostgresStore(dsn), PostgresStore(cluster.create_database())
    try:
        apply_batch = twice._apply_batch

        async def answer_lost(batch: Batch) -> dict[int, int]:
            await apply_batch(batch)  # committed, then the connection drops before the answer
            raise asyncpg.ConnectionDoesNotExistError("connection was closed in the middle of operation")

        for batch in batches:
            once.apply(batch)
            twice._apply_batch = answer_lost  # type: ignore[method-assign]
            with pytest.raises(StoreUnreachable):
                twice.apply(batch)
            twice._apply_batch = apply_batch  # type: ignore[method-assign]
            twice.apply(batch)  # the writer's retry, on a new connection
        assert _snapshot(cluster, name) == _snapshot(cluster, twice.dsn.rsplit("/", 1)[1])
        assert twice.delivery_counts(1) == once.delivery_counts(1) == {ROW[0]: 3}
    finally:
        once.close()
        twice.close()


def test_an_outage_is_store_unreachable_and_the_same_store_commits_after_it(
    database: tuple[PostgresCluster, str, str], store: PostgresStore
) -> None:
    """Unreachable (not a plain StorageError): the writer keeps the batch and retries; the store reconnects
    on the next apply once the server is back, with nothing of the failed attempt half-written."""
    cluster, _dsn, _name = database
    store.apply(_declare())
    retried = Batch(2, added={message_key(1, 2): (message_key(1, 2), "", "q", HEADER, b"late", None, 0)})
    cluster.stop()
    try:
        with pytest.raises(StoreUnreachable):
            store.apply(retried)
        with pytest.raises(StoreUnreachable):
            store.apply(retried)  # still down: refused again, no stale connection used
    finally:
        cluster.start()
    store.apply(retried)
    assert [row[4] for row in store.messages(1)] == [b"body", b"late"]


def test_a_refused_batch_is_not_unreachable(store: PostgresStore) -> None:
    bad = Batch(1, topology=[("queue+", (1, "/", "q", 0, None)), ("queue+", (2, "/", "q", 0, None))])
    with pytest.raises(StorageError) as raised:
        store.apply(bad)  # a unique violation: retrying could never help, so it stays fatal
    assert not isinstance(raised.value, StoreUnreachable)
