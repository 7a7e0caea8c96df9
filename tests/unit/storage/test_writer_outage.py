"""StoreWriter when the store's server cannot be reached ("losing the database"): the batch is
kept and applied again until it commits, its confirms are withheld meanwhile, the store alarm is raised once
and cleared once, and writes made during the outage commit after it; any other failure stays fatal, and
close() during an outage stops the retries.

The store is a MemoryStore run on the writer's thread that refuses commits with StoreUnreachable while
``down`` is set; the loop is a real asyncio loop (the writer thread hands results back through it)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from structlog.testing import capture_logs

from broker.core.model.dispatcher import Dispatcher
from broker.core.queues.queue import Envelope, Queue
from broker.storage.base import Batch, StorageError, StoreFenced, StoreUnreachable
from broker.storage.memory import MemoryStore
from broker.storage.writer import StoreWriter
from tests.unit.storage.helpers import Waiter, make_message


class FlakyStore(MemoryStore):
    threaded = True

    def __init__(self) -> None:
        super().__init__()
        self.down = threading.Event()
        self.refuse_with: StorageError | None = None  # once: a failure other than unreachable
        self.attempts: list[int] = []  # batch ids, one per apply
        self.closed_clean: bool | None = None

    def apply(self, batch: Batch) -> None:
        self.attempts.append(batch.id)
        if self.refuse_with is not None:
            error, self.refuse_with = self.refuse_with, None
            raise error
        if self.down.is_set():
            raise StoreUnreachable("PostgreSQL store postgresql://db/x: ConnectionRefusedError(111)")
        super().apply(batch)

    def close(self, clean: bool = True) -> None:
        self.closed_clean = clean
        super().close(clean)


class Outage:
    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.store = FlakyStore()
        self.failures: list[BaseException] = []
        self.alarms: list[bool] = []
        self.writer = StoreWriter(
            self.store,
            self.loop.call_soon,
            self.loop.call_soon_threadsafe,
            self.failures.append,
            self.alarms.append,
        )

    def run_until(self, condition: Callable[[], bool]) -> None:
        async def wait() -> None:
            while not condition():
                await asyncio.sleep(0.001)
            await asyncio.sleep(0)

        self.loop.run_until_complete(asyncio.wait_for(wait(), 10))

    def queue(self) -> Queue:
        queue = Queue("q", "/", Dispatcher(lambda callback: None), durable=True)
        self.writer.queue_declared(queue)
        return queue

    def publish(self, queue: Queue, seq: int, log: list[tuple[str, Any]]) -> None:
        self.writer.message_added(queue, Envelope(seq, make_message("", "q", b"m%d" % seq, delivery_mode=2)))
        self.writer.on_commit(self.writer.batch_id, Waiter(f"m{seq}", log))

    def bodies(self, queue: Queue) -> list[bytes]:
        return [row[4] for row in self.store.messages(queue.store_id)]


@pytest.fixture
def outage() -> Iterator[Outage]:
    made = Outage()
    try:
        yield made
    finally:
        made.store.down.clear()
        made.writer.close()
        made.loop.close()


def test_an_unreachable_store_withholds_confirms_raises_the_alarm_and_commits_when_back(
    outage: Outage,
) -> None:
    writer, store = outage.writer, outage.store
    queue = outage.queue()
    log: list[tuple[str, Any]] = []
    outage.publish(queue, 1, log)
    outage.run_until(lambda: len(log) == 1)

    store.down.set()
    with capture_logs() as logs:
        outage.publish(queue, 2, log)
        outage.run_until(lambda: outage.alarms == [True] and store.attempts.count(store.attempts[-1]) >= 3)
        outage.publish(queue, 3, log)  # the next batch grows behind the one being retried
        outage.run_until(lambda: store.attempts.count(store.attempts[-1]) >= 5)
        assert [name for name, _ in log] == ["m1"]  # nothing confirmed during the outage
        assert outage.alarms == [True]  # raised once, however many retries
        assert writer.unreachable_since is not None
        assert set(store.attempts[1:]) == {2}  # the same batch, again and again; the next one waits
        store.down.clear()
        outage.run_until(lambda: len(log) == 3)

    assert [name for name, _ in log] == ["m1", "m2", "m3"]  # confirms in batch order
    assert outage.alarms == [True, False]
    assert outage.failures == []
    assert outage.bodies(queue) == [b"m1", b"m2", b"m3"]
    assert writer.unreachable_since is None
    events = [entry["event"] for entry in logs]
    assert events.index("store_unreachable") < events.index("store_reachable_again")
    again = next(entry for entry in logs if entry["event"] == "store_reachable_again")
    assert again["attempts"] >= 5
    assert again["outage_s"] > 0


@pytest.mark.parametrize(
    "error",
    [StoreFenced("epoch 3 holds the store"), StorageError("duplicate key")],
    ids=["fenced", "refused"],
)
def test_any_other_failure_is_fatal_at_once(outage: Outage, error: StorageError) -> None:
    queue = outage.queue()
    log: list[tuple[str, Any]] = []
    outage.store.refuse_with = error
    outage.publish(queue, 1, log)
    outage.run_until(lambda: bool(outage.failures))

    assert outage.failures == [error]
    assert outage.alarms == []  # no outage, no alarm: the node stops (fenced: it is deposed)
    assert outage.store.attempts == [1]  # not retried
    assert log == []


def test_a_refusal_after_the_outage_is_fatal_and_clears_the_alarm(outage: Outage) -> None:
    queue = outage.queue()
    log: list[tuple[str, Any]] = []
    outage.store.down.set()
    outage.publish(queue, 1, log)
    outage.run_until(lambda: outage.alarms == [True])
    fenced = StoreFenced("epoch 2 holds the store")  # a successor took over while this node was cut off
    outage.store.refuse_with = fenced
    outage.run_until(lambda: bool(outage.failures))

    assert outage.failures == [fenced]
    assert outage.alarms == [True, False]
    assert log == []


def test_close_during_an_outage_stops_the_retries_and_is_not_clean(outage: Outage) -> None:
    queue = outage.queue()
    log: list[tuple[str, Any]] = []
    outage.store.down.set()
    outage.publish(queue, 1, log)
    outage.run_until(lambda: outage.alarms == [True])

    outage.writer.close()  # the deposed node's shutdown: returns although the store is still down

    tried = len(outage.store.attempts)
    assert outage.store.closed_clean is False  # writes were lost: the next start counts it as a crash
    assert log == []
    outage.store.down.clear()
    outage.loop.run_until_complete(asyncio.sleep(0.1))
    assert len(outage.store.attempts) == tried  # the thread stopped retrying
    assert outage.bodies(queue) == []
