"""Group commit: the loop-side `Persistence` that gathers one loop turn's writes into a batch and hands it to
the store's writer thread.

While a batch commits, the next one keeps growing, so under load commits get larger rather than more
frequent (the fsync cost is shared by every message of the commit), and more of the messages are acked
before they would have been written. A store that can commit several batches as one (``apply_all``: the
SQLite store's segment files, one append and one fdatasync for them) is also handed, at the end of its loop
turn, each batch someone waits for (publisher confirms, a ``tx.commit-ok``), and its writer thread takes all
that were handed over while it was busy the moment it is free: the confirms' latency, which bounds a
publisher's rate, then no longer includes the loop's round trip to hand over the next batch. Any other store
(PostgreSQL, memory) has one batch in flight at a time. Either way batches commit in order.

Waiters (channels holding confirms, a connection holding ``tx.commit-ok``) are called on the loop once their
batch has committed. A failed commit is fatal: nothing in it is confirmed, and ``on_failure`` stops the
broker.

Except when the store's server cannot be reached (`StoreUnreachable`: a PostgreSQL store whose server stopped,
restarted or fell off the network): the writer thread keeps the batch and applies it again with a
short backoff, and ``on_outage(True)`` raises the store alarm (publishers get ``connection.blocked``,
consumers go on being served from memory). Its confirms stay withheld until it commits; then
``on_outage(False)`` clears the alarm (log line ``store_reachable_again`` with the outage's length). An
outage longer than the lease ends in the high-availability node's deposition (broker.node_ha), which stops
the retries with ``close``.
"""

from __future__ import annotations

import queue as thread_queue
import threading
import time
from collections.abc import Callable
from functools import partial

import structlog

from broker.core.topology.persistence import CommitWaiter
from broker.storage.base import Batch, Store, StoreUnreachable
from broker.storage.batch_writes import BatchWrites, CallSoon
from broker.storage.commit_times import CommitTimes
from broker.storage.io_counters import IOCounters

log = structlog.get_logger("warrenmq.storage")

# Retries of a batch while the store is unreachable: the first soon, then doubling up to the cap. Publishers
# stay blocked until a retry finds the server back, so the cap is what an outage costs beyond its own length
# (measured with a 1 s cap: 0.75-0.8 s from PostgreSQL's restart to connection.unblocked, with 0.25 s:
# 0.1-0.2 s); a refused connection attempt four times a second costs the server nothing.
RETRY_FIRST_S = 0.05
RETRY_MAX_S = 0.25


class StoreWriter(BatchWrites):
    """Implements ``broker.core.topology.persistence.Persistence`` over a `Store`."""

    def __init__(
        self,
        store: Store,
        call_soon: CallSoon,
        call_soon_threadsafe: CallSoon,
        on_failure: Callable[[BaseException], None],
        on_outage: Callable[[bool], None] | None = None,
    ) -> None:
        self.store = store
        self.writes = 0
        self.replaying = False  # recovery re-declares what the store already holds: write nothing
        # A high-availability standby (broker/node_ha) keeps its writes until it is elected: the store
        # belongs to the active node meanwhile. release() lets them go.
        self.held = False
        self.commit_times = CommitTimes()  # read by Prometheus (warrenmq_store_commit_seconds)
        # The store's file I/O for /api/nodes (io_*, queue_index_*, msg_store_*, mnesia_disk_tx_count); a
        # store that writes no file (MemoryStore) counts none.
        self.io = IOCounters()
        self._on_disk = bool(getattr(store, "on_disk", True))
        self._synced = bool(getattr(store, "syncs_each_commit", False))
        self._call_soon = call_soon
        self._call_soon_threadsafe = call_soon_threadsafe
        self._on_failure = on_failure
        self._on_outage = on_outage
        self.unreachable_since: float | None = None  # monotonic seconds; set while the store is out of reach
        self._stopping = threading.Event()  # close(): the writer thread stops retrying
        self._batch = Batch(1)
        # Persistence.batch_id, read for every stored publish on a confirming channel: a plain attribute,
        # kept with _batch, where a property was a call behind each generic attribute lookup.
        self.batch_id = 1
        self._inflight: dict[int, Batch] = {}  # handed to the writer, not yet committed; by id, in order
        # Several batches in flight, committed together (see the module's docstring), or one at a time.
        self._apply_all: Callable[[list[Batch]], None] | None = getattr(store, "apply_all", None)
        self._committed = 0
        self._flush_scheduled = False
        self._failed = False
        self._closed = False
        self._next_queue_id = store.max_queue_id() + 1
        self._next_delayed_key = store.max_delayed_key() + 1
        self._jobs: thread_queue.SimpleQueue[Batch | None] = thread_queue.SimpleQueue()
        self._writer_thread: threading.Thread | None = None
        if store.threaded:
            self._writer_thread = threading.Thread(target=self._run, name="warrenmq-store", daemon=True)
            self._writer_thread.start()

    # -- Persistence: commit tracking

    @property
    def committed_id(self) -> int:
        return self._committed

    @property
    def busy(self) -> bool:
        """Writes not yet committed (the test ``settle()`` barrier waits on this)."""
        return bool(self._inflight) or not self._batch.empty()

    def on_commit(self, batch_id: int, waiter: CommitWaiter) -> None:
        if batch_id <= self._committed:
            self._call_soon(waiter.committed)
        elif batch_id == self._batch.id:
            self._batch.waiters[waiter] = None
        elif batch_id in self._inflight:
            self._inflight[batch_id].waiters[waiter] = None
        else:  # pragma: no cover - batch ids only come from batch_id
            raise ValueError(f"unknown store batch {batch_id}")

    def release(self) -> None:
        """Elected active: read the store's counters again (the previous active node moved them on since
        this writer was built) and commit what waited, at the end of this loop turn."""
        self._next_queue_id = max(self._next_queue_id, self.store.max_queue_id() + 1)
        self._next_delayed_key = max(self._next_delayed_key, self.store.max_delayed_key() + 1)
        self.held = False
        self._schedule_flush()

    def _dirty(self) -> None:
        self.writes += 1
        self._schedule_flush()

    def _schedule_flush(self) -> None:
        """At the end of this loop turn (once, however many writes)."""
        if not self._flush_scheduled:
            self._flush_scheduled = True
            self._call_soon(self._flush)

    def _flush(self) -> None:
        """End of a loop turn: hand the batch over. While a batch commits, only a batch someone waits for
        (confirms, a commit-ok) to a store that takes several at once; any other keeps growing until that
        commit flushes again, so that more of its messages are acked before they are written (never)."""
        self._flush_scheduled = False
        batch = self._batch
        # closed: close() committed what was pending; a flush scheduled before it has nothing left to do.
        if self._failed or self.held or self._closed:
            return
        if self._inflight and (self._apply_all is None or not batch.waiters):
            return
        empty = batch.empty()
        if empty and not batch.waiters:
            return  # writes that cancelled out (e.g. published then consumed with no_ack), nobody waiting
        self._batch = Batch(batch.id + 1)
        self.batch_id = batch.id + 1
        if empty and not self._inflight:
            self._done([batch], None)  # nothing to write, nothing committing before it
            return
        self._inflight[batch.id] = batch
        if self._writer_thread is not None:
            self._jobs.put(batch)
        else:
            self._done([batch], self._apply([batch]))

    def _apply(self, batches: list[Batch]) -> BaseException | None:
        started = time.perf_counter()
        try:
            if self._apply_all is not None:
                self._apply_all(batches)
            else:
                for batch in batches:
                    self.store.apply(batch)
        except BaseException as error:  # reported to the loop, which stops the broker
            return error
        elapsed_s = time.perf_counter() - started
        self.commit_times.record(elapsed_s)
        if self._on_disk:
            self.io.commit(batches, elapsed_s, self._synced)
        for batch in batches:
            batch.committed = True
        return None

    def _run(self) -> None:
        while True:
            batches, stop = self._take()
            if batches:
                error = self._apply(batches)
                if isinstance(error, StoreUnreachable):
                    error = self._retry(batches, error)
                if isinstance(error, StoreUnreachable):
                    return  # closing during the outage: close() tries the batch once more
                if not self._post(partial(self._done, batches, error)) or error is not None:
                    return  # after a failure nothing more is applied
            if stop:
                return

    def _take(self) -> tuple[list[Batch], bool]:
        """The writer thread: the next batch handed over (waiting for it), and with ``apply_all`` every other
        one already waiting. True with them when close() asked the thread to stop."""
        item = self._jobs.get()
        batches: list[Batch] = []
        while item is not None:
            batches.append(item)
            if self._apply_all is None:
                return batches, False
            try:
                item = self._jobs.get_nowait()
            except thread_queue.Empty:
                return batches, False
        return batches, True

    def _post(self, callback: Callable[[], None]) -> bool:
        try:
            self._call_soon_threadsafe(callback)
        except RuntimeError:  # the loop is closed: shutdown raced a commit; close() finishes it
            return False
        return True

    def _retry(self, batches: list[Batch], error: BaseException | None) -> BaseException | None:
        """The writer thread, the store out of reach: apply ``batches`` again (the store reconnects) until
        they commit, fail otherwise, or close() stops the writer (the error then stays StoreUnreachable)."""
        started = time.monotonic()
        self._post(partial(self._unreachable, batches, error))
        delay_s, attempts = RETRY_FIRST_S, 1
        while isinstance(error, StoreUnreachable) and not self._stopping.wait(delay_s):
            delay_s = min(delay_s * 2, RETRY_MAX_S)
            attempts += 1
            error = self._apply(batches)
        if not isinstance(error, StoreUnreachable):
            self._post(partial(self._reachable_again, time.monotonic() - started, attempts, error))
        return error

    def _unreachable(self, batches: list[Batch], error: BaseException | None) -> None:
        self.unreachable_since = time.monotonic()
        log.warning(
            "store_unreachable",
            batch=batches[0].id,
            # channels and transactions holding confirms or commit-oks
            commit_waiters=sum(len(batch.waiters) for batch in batches),
            error=repr(error),
            retry_max_s=RETRY_MAX_S,
        )
        if self._on_outage is not None:
            self._on_outage(True)

    def _reachable_again(self, outage_s: float, attempts: int, error: BaseException | None) -> None:
        self.unreachable_since = None
        if error is None:
            log.warning("store_reachable_again", outage_s=round(outage_s, 3), attempts=attempts)
        if self._on_outage is not None:
            self._on_outage(False)

    def _done(self, batches: list[Batch], error: BaseException | None) -> None:
        for batch in batches:
            self._inflight.pop(batch.id, None)
        if error is not None:
            self._failed = True
            log.error("store_commit_failed", batch=batches[0].id, error=repr(error))
            self._on_failure(error)
            return
        for batch in batches:
            self._committed = batch.id
            for waiter in batch.waiters:
                waiter.committed()
        if not self._batch.empty() or self._batch.waiters:
            self._flush()

    def close(self) -> None:
        """Commit what is pending (clean shutdown leaves nothing half-written), stop the thread, close
        (once)."""
        if self._closed:
            return
        self._closed = True
        if self._writer_thread is not None:
            self._stopping.set()
            self._jobs.put(None)
            self._writer_thread.join()
            self._writer_thread = None
        for batch in [*self._inflight.values(), self._batch]:
            # In flight: the thread stopped before it could take them, or during an outage.
            if not batch.empty() and not batch.committed and not self._failed:
                self._failed = self._apply([batch]) is not None  # a stop that lost writes is not clean
        self._inflight.clear()
        self.store.close(clean=not self._failed)
