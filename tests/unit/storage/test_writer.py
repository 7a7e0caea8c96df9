"""StoreWriter, the group commit between the core and a store: one batch per loop turn, handed over at its end
(for a store without ``apply_all``, one batch in flight), waiters called after their commit in batch order,
writes that cancel out never reach the store, close() commits what is pending, and a failed commit confirms
nothing more.

Over a MemoryStore the writer applies inline and the loop is a hand-run list of callbacks; over a SqliteStore
it applies on its thread and hands back through a real asyncio loop. A second SQLite connection holding the
write lock keeps a batch in flight for as long as a test needs (or, with a zero busy timeout, fails it).
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Protocol

import pytest

from broker.core.model.dispatcher import Dispatcher
from broker.core.queues.queue import Envelope, Queue
from broker.storage.base import Batch, MessageRow, message_key
from broker.storage.memory import MemoryStore
from broker.storage.sqlite import DB_NAME, SqliteStore
from broker.storage.writer import StoreWriter
from tests.unit.storage.helpers import ManualLoop, Waiter, make_message


class Harness(Protocol):
    writer: StoreWriter
    failures: list[BaseException]

    def turn(self) -> None:
        """One event-loop turn: what has been scheduled runs."""
        ...

    def settle(self, until: Callable[[], bool] = lambda: True) -> None:
        """Run the loop until the writer has nothing uncommitted (and ``until()`` holds)."""
        ...

    def stored(self, queue_id: int) -> list[MessageRow]:
        """The committed messages of a queue, as another reader of the store sees them."""
        ...

    def close(self) -> None: ...


class MemoryHarness:
    def __init__(self) -> None:
        self.loop = ManualLoop()
        self.store = MemoryStore()
        self.failures: list[BaseException] = []
        self.writer = StoreWriter(self.store, self.loop.call_soon, self.loop.call_soon, self.failures.append)

    def turn(self) -> None:
        self.loop.turn()

    def settle(self, until: Callable[[], bool] = lambda: True) -> None:
        self.loop.drain()
        assert not self.writer.busy
        assert until()

    def stored(self, queue_id: int) -> list[MessageRow]:
        return list(self.store.messages(queue_id))

    def close(self) -> None:
        self.writer.close()


class SqliteHarness:
    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.loop = asyncio.new_event_loop()
        self.store = SqliteStore(directory, fsync="never")
        self.failures: list[BaseException] = []
        self.writer = StoreWriter(
            self.store, self.loop.call_soon, self.loop.call_soon_threadsafe, self.failures.append
        )
        self.reader = sqlite3.connect(directory / DB_NAME)

    def turn(self) -> None:
        self.loop.run_until_complete(asyncio.sleep(0))

    def settle(self, until: Callable[[], bool] = lambda: True) -> None:
        async def idle() -> None:
            while self.writer.busy or not until():
                await asyncio.sleep(0.001)
            await asyncio.sleep(0)  # what the last commit scheduled with call_soon

        self.loop.run_until_complete(asyncio.wait_for(idle(), 10))

    def run_for(self, seconds: float) -> None:
        self.loop.run_until_complete(asyncio.sleep(seconds))

    def stored(self, queue_id: int) -> list[MessageRow]:
        """Read on the loop, between commits (the writer thread idle): messages live in segment files whose
        index the store keeps, not in a table another connection could read."""
        return list(self.store.messages(queue_id))

    def block(self) -> sqlite3.Connection:
        """Hold the database's write lock from another connection: the writer thread's BEGIN IMMEDIATE waits
        (up to the store's busy timeout) until the returned connection rolls back. Only a batch with an SQLite
        part waits: the tests below give the batch they block a topology write (``queue_consumed``)."""
        blocker = sqlite3.connect(self.directory / DB_NAME, isolation_level=None)
        blocker.execute("BEGIN IMMEDIATE")
        return blocker

    def close(self) -> None:
        try:
            self.writer.close()
        finally:
            self.reader.close()
            self.loop.close()


@pytest.fixture(params=["memory", "sqlite"])
def harness(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Harness]:
    made: Harness = MemoryHarness() if request.param == "memory" else SqliteHarness(tmp_path)
    try:
        yield made
    finally:
        made.close()


@pytest.fixture
def sqlite_harness(tmp_path: Path) -> Iterator[SqliteHarness]:
    made = SqliteHarness(tmp_path)
    try:
        yield made
    finally:
        made.close()


def _queue(writer: StoreWriter, name: str) -> Queue:
    """A durable queue as the core hands it to the writer (which gives it its store id)."""
    queue = Queue(name, "/", Dispatcher(lambda callback: None), durable=True)
    writer.queue_declared(queue)
    return queue


def _envelope(seq: int, body: str = "") -> Envelope:
    return Envelope(seq, make_message("", "q", (body or f"m{seq}").encode(), delivery_mode=2))


def _bodies(rows: list[MessageRow]) -> list[bytes]:
    return [row[4] for row in rows]


# -- one turn, one batch


def test_the_writes_of_one_turn_are_committed_as_one_batch(harness: Harness) -> None:
    writer = harness.writer
    writer.vhost_added("v")
    first, second = _queue(writer, "a"), _queue(writer, "b")
    for seq in range(1, 6):
        writer.message_added(first, _envelope(seq))
        writer.message_added(second, _envelope(seq))
    assert writer.writes == 1 + 2 + 10
    assert (writer.batch_id, writer.committed_id) == (1, 0)
    assert harness.stored(first.store_id) == []  # nothing before the turn ends

    harness.settle()

    assert (writer.batch_id, writer.committed_id) == (2, 1)  # one batch held all of it
    assert _bodies(harness.stored(first.store_id)) == [f"m{seq}".encode() for seq in range(1, 6)]
    assert len(harness.stored(second.store_id)) == 5
    if isinstance(harness, MemoryHarness):
        assert harness.store.commits == 1
        assert [row.name for row in harness.store.load().queues] == ["a", "b"]


def test_waiters_are_called_after_their_commit_and_in_batch_order(harness: Harness) -> None:
    writer = harness.writer
    queue = _queue(writer, "q")
    log: list[tuple[str, Any]] = []

    def seen() -> tuple[int, list[bytes]]:
        return writer.committed_id, _bodies(harness.stored(queue.store_id))

    writer.message_added(queue, _envelope(1))
    writer.on_commit(writer.batch_id, Waiter("first", log, seen))
    assert log == []
    harness.settle(lambda: len(log) == 1)
    writer.message_added(queue, _envelope(2))
    writer.on_commit(writer.batch_id, Waiter("second", log, seen))
    writer.on_commit(1, Waiter("late for the first", log, seen))  # already committed: called on a later turn
    assert len(log) == 1
    harness.settle(lambda: len(log) == 3)

    assert log[0] == ("first", (1, [b"m1"]))
    assert {entry[0] for entry in log[1:]} == {"second", "late for the first"}
    assert dict(log)["second"] == (2, [b"m1", b"m2"])


# -- writes that cancel out


def test_a_message_added_and_removed_in_one_turn_never_reaches_the_store(harness: Harness) -> None:
    writer = harness.writer
    queue = _queue(writer, "q")
    harness.settle()
    commits_before = harness.store.commits if isinstance(harness, MemoryHarness) else None
    log: list[tuple[str, Any]] = []

    gone, kept = _envelope(1), _envelope(2)
    writer.message_added(queue, gone)
    writer.message_delivered(queue, gone)
    writer.messages_removed(queue, [gone])  # published, then consumed with no_ack in the same turn
    writer.on_commit(writer.batch_id, Waiter("empty batch", log, lambda: writer.committed_id))
    harness.settle(lambda: bool(log))

    assert log == [("empty batch", 2)]  # the empty batch still completes, in order
    assert harness.stored(queue.store_id) == []
    if isinstance(harness, MemoryHarness):
        assert harness.store.commits == commits_before  # the store was not even asked

    writer.message_added(queue, gone)
    writer.message_added(queue, kept)
    writer.messages_removed(queue, [gone])
    harness.settle()
    assert _bodies(harness.stored(queue.store_id)) == [b"m2"]


def test_a_stored_publish_stays_a_bare_message_keyed_by_the_seq_it_leaves_with(harness: Harness) -> None:
    """Queue.enqueue stores a persistent publish by its seq without giving it an envelope: the row's key is
    the one its envelope gets when it leaves ``fresh``, so its ack deletes that row and no other."""
    writer = harness.writer
    queue = _queue(writer, "q")
    queue.store = writer
    for body in (b"a", b"b", b"c"):
        queue.enqueue(make_message("", "q", body, delivery_mode=2))
    assert len(queue.fresh) == 3
    assert not queue.ready
    first = Envelope(queue.last_seq - len(queue.fresh) + 1, queue.fresh.popleft())  # as basic.get takes it
    queue.requeue([first])  # back in ``ready``, ahead of the fresh ones
    queue.enqueue(make_message("", "q", b"d", delivery_mode=2))
    envelopes = list(queue.ready_envelopes())
    assert [envelope.message.body for envelope in envelopes] == [b"a", b"b", b"c", b"d"]
    harness.settle()
    keys = [message_key(queue.store_id, envelope.seq) for envelope in envelopes]
    assert [row[0] for row in harness.stored(queue.store_id)] == keys

    writer.messages_removed(queue, envelopes[1:3])
    harness.settle()
    assert _bodies(harness.stored(queue.store_id)) == [b"a", b"d"]


def test_transient_and_never_queued_messages_are_not_removed_from_the_store(harness: Harness) -> None:
    """messages_removed skips what was never stored: a transient message, or one with seq 0 (refused by
    reject-publish-dlx before it was queued)."""
    writer = harness.writer
    queue = _queue(writer, "q")
    harness.settle()
    writes = writer.writes
    transient = Envelope(1, make_message("", "q", b"t", delivery_mode=1))
    refused = Envelope(0, make_message("", "q", b"r", delivery_mode=2))
    writer.messages_removed(queue, [transient, refused])
    assert writer.writes == writes
    assert not writer.busy


# -- batches in flight


def test_while_a_batch_commits_the_next_ones_are_handed_over_and_commit_together_after_it(
    sqlite_harness: SqliteHarness,
) -> None:
    """The SQLite store commits several batches as one (``apply_all``): each turn's batch is handed over at
    the turn's end, and the writer thread takes all that waited as one commit once it is free."""
    harness, writer = sqlite_harness, sqlite_harness.writer
    queue = _queue(writer, "q")
    harness.settle()
    log: list[tuple[str, Any]] = []

    def seen() -> int:  # the writer thread may be committing later batches meanwhile: not the store's rows
        return writer.committed_id

    blocker = harness.block()
    try:
        writer.message_added(queue, _envelope(1))
        writer.queue_consumed(queue)
        writer.on_commit(writer.batch_id, Waiter("A", log, seen))
        harness.turn()  # batch A goes to the writer thread, which waits for the lock
        in_flight = writer.batch_id - 1
        while not writer._jobs.empty():  # until the thread took it (B and C then wait behind it)
            harness.run_for(0.001)
        writer.message_added(queue, _envelope(2))
        writer.on_commit(writer.batch_id, Waiter("B", log, seen))
        harness.turn()
        writer.message_added(queue, _envelope(3))
        writer.on_commit(writer.batch_id, Waiter("C", log, seen))
        harness.run_for(0.1)
        assert log == []  # nothing is confirmed before its commit
        assert writer.committed_id == in_flight - 1
        assert writer.batch_id == in_flight + 3  # B and C were handed over behind A
        commits = writer.io.write_count
    finally:
        blocker.rollback()
        blocker.close()

    harness.settle(lambda: len(log) == 3)
    assert log == [("A", in_flight), ("B", in_flight + 1), ("C", in_flight + 2)]  # each after its commit
    assert writer.io.write_count == commits + 2  # A, then B and C as one
    assert _bodies(harness.stored(queue.store_id)) == [b"m1", b"m2", b"m3"]
    assert harness.failures == []


def test_while_a_batch_commits_a_batch_nobody_waits_for_keeps_growing(sqlite_harness: SqliteHarness) -> None:
    """Without confirms to send, handing a batch over early gains nothing: it stays, and a message published
    and acked before the commit ends is never written."""
    harness, writer = sqlite_harness, sqlite_harness.writer
    queue = _queue(writer, "q")
    harness.settle()
    blocker = harness.block()
    try:
        writer.message_added(queue, _envelope(1))
        writer.queue_consumed(queue)
        harness.turn()  # in flight, waiting for the lock
        in_flight = writer.batch_id - 1
        writer.message_added(queue, _envelope(2))
        harness.turn()
        writer.message_added(queue, _envelope(3))
        harness.turn()
        writer.messages_removed(queue, [_envelope(2)])
        harness.run_for(0.05)
        assert writer.batch_id == in_flight + 1  # still gathering
        commits = writer.io.write_count
    finally:
        blocker.rollback()
        blocker.close()
    harness.settle()
    assert writer.committed_id == in_flight + 1
    assert writer.io.write_count == commits + 2
    assert _bodies(harness.stored(queue.store_id)) == [b"m1", b"m3"]


def test_a_store_without_apply_all_has_one_batch_in_flight_and_the_next_one_grows(tmp_path: Path) -> None:
    """PostgreSQL's and the memory store's way: while a batch commits, every later write joins one batch."""
    loop = asyncio.new_event_loop()
    store = SqliteStore(tmp_path, fsync="never")
    single = _OneAtATime(store)
    failures: list[BaseException] = []
    writer = StoreWriter(single, loop.call_soon, loop.call_soon_threadsafe, failures.append)
    try:
        queue = _queue(writer, "q")
        for seq in range(1, 4):
            writer.message_added(queue, _envelope(seq))
            loop.run_until_complete(asyncio.sleep(0))  # a turn: the first hands its batch over
        assert writer.batch_id == 2  # the two writes after the one in flight share a batch

        single.release.set()
        loop.run_until_complete(asyncio.wait_for(_idle(writer), 10))
        assert single.applied == [[1], [2]]
        assert _bodies(list(store.messages(queue.store_id))) == [b"m1", b"m2", b"m3"]
        assert failures == []
    finally:
        single.release.set()
        writer.close()
        loop.close()


class _OneAtATime:
    """A store without ``apply_all`` whose commits wait for ``release``."""

    def __init__(self, store: SqliteStore) -> None:
        self.store = store
        self.threaded = True
        self.applied: list[list[int]] = []
        self.release = threading.Event()

    def __getattr__(self, name: str) -> Any:
        if name == "apply_all":
            raise AttributeError(name)
        return getattr(self.store, name)

    def apply(self, batch: Batch) -> None:
        self.release.wait(10)
        self.applied.append([batch.id])
        self.store.apply(batch)


async def _idle(writer: StoreWriter) -> None:
    while writer.busy:
        await asyncio.sleep(0.001)


# -- close


def test_close_commits_what_is_pending(harness: Harness, tmp_path: Path) -> None:
    writer = harness.writer
    queue = _queue(writer, "q")
    writer.message_added(queue, _envelope(1))
    writer.message_added(queue, _envelope(2))
    writer.messages_removed(queue, [_envelope(1)])

    harness.close()  # no loop turn ran: the batch was never handed over

    if isinstance(harness, MemoryHarness):
        assert _bodies(list(harness.store.messages(queue.store_id))) == [b"m2"]
        assert harness.store.commits == 1
    else:
        reopened = SqliteStore(tmp_path)
        try:
            assert [row.name for row in reopened.load().queues] == ["q"]
            assert _bodies(list(reopened.messages(queue.store_id))) == [b"m2"]
        finally:
            reopened.close()


def test_a_flush_scheduled_before_close_does_nothing_after_it(sqlite_harness: SqliteHarness) -> None:
    """A start-up that fails after recovery wrote something (a TLS listener that cannot load its files)
    closes the writer within the loop turn: the flush that turn scheduled must not commit again to the
    closed store, which failed it ("Cannot operate on a closed database") and logged a store failure."""
    harness, writer = sqlite_harness, sqlite_harness.writer
    writer.vhost_added("v")  # schedules the end-of-turn flush
    writer.close()
    harness.turn()  # the scheduled flush runs now
    assert harness.failures == []
    reopened = SqliteStore(harness.directory)
    try:
        assert reopened.load().vhosts == ["v"]  # close() committed it, once
    finally:
        reopened.close()


def test_close_commits_the_batch_in_flight_and_the_one_behind_it(
    sqlite_harness: SqliteHarness, tmp_path: Path
) -> None:
    harness, writer = sqlite_harness, sqlite_harness.writer
    queue = _queue(writer, "q")
    harness.settle()
    blocker = harness.block()
    try:
        writer.message_added(queue, _envelope(1))
        writer.message_added(queue, _envelope(2))
        writer.queue_consumed(queue)
        harness.turn()  # in flight, waiting for the lock
        writer.messages_removed(queue, [_envelope(1)])
        writer.message_added(queue, _envelope(3))
        assert writer.busy
    finally:
        blocker.rollback()
        blocker.close()
    harness.close()

    reopened = SqliteStore(tmp_path)
    try:
        assert _bodies(list(reopened.messages(queue.store_id))) == [b"m2", b"m3"]
    finally:
        reopened.close()


# -- a failed commit


@pytest.mark.parametrize("cause", ["database locked", "connection closed"])
def test_a_failed_commit_stops_confirming(sqlite_harness: SqliteHarness, tmp_path: Path, cause: str) -> None:
    harness, writer = sqlite_harness, sqlite_harness.writer
    queue = _queue(writer, "q")
    writer.message_added(queue, _envelope(1))
    harness.settle()
    log: list[tuple[str, Any]] = []
    blocker: sqlite3.Connection | None = None
    if cause == "database locked":
        harness.store.db.execute("PRAGMA busy_timeout=0")  # the writer thread is idle: safe to touch
        blocker = harness.block()
    else:
        harness.store.db.close()

    writer.message_added(queue, _envelope(2))
    writer.queue_consumed(queue)  # a batch with an SQLite part: the blocked or closed database fails it
    writer.on_commit(writer.batch_id, Waiter("failed batch", log))
    harness.settle(lambda: bool(harness.failures))
    if blocker is not None:
        blocker.rollback()
        blocker.close()

    assert len(harness.failures) == 1
    assert isinstance(harness.failures[0], sqlite3.Error)
    committed = writer.committed_id
    writer.message_added(queue, _envelope(3))
    writer.on_commit(writer.batch_id, Waiter("later batch", log))
    for _ in range(5):
        harness.turn()
    harness.run_for(0.05)

    assert log == []
    assert writer.committed_id == committed
    assert len(harness.failures) == 1  # on_failure once; nothing more was tried
    assert _bodies(harness.stored(queue.store_id)) == [b"m1"]
    harness.close()  # close() does not commit after a failure either
    reopened = SqliteStore(tmp_path)
    try:
        assert _bodies(list(reopened.messages(queue.store_id))) == [b"m1"]
    finally:
        reopened.close()
