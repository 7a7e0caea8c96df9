"""The background writer: batches in through a bounded queue, rotating files out; drops counted, never blocks.

The loop thread calls ``submit`` (non-blocking ``put_nowait``). When the queue is full the batch is dropped
and counted (``stats``, the metric) and the writer thread later writes one ``journal_drop`` row to the events
table for the rows lost since its last report, so analyses can tell a quiet period from a lost one. Only the
loop thread increments the drop counters and only the writer thread advances what it has reported, so no
lock is needed.

Batches are packed rows (broker.journal.rows, timestamps in ns); once a batch is written its buffer goes back
to the recorder for reuse.

Rotation: a table's current file is completed (renamed from its dot-prefixed in-progress name) when it is
older than ``rotate_s``, larger than ``rotate_bytes``, or when the hour partition changes, and at ``close``.
"""

from __future__ import annotations

import os
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import structlog

from broker.journal.files import PARQUET, JournalFile, default_format, open_file, warm_up
from broker.journal.rows import RowBuffer, batch_of, recycle
from broker.journal.schema import EVENTS, JOURNAL_DROP, TABLES, row_width

log = structlog.get_logger("warrenmq.journal")

Batch = tuple[str, RowBuffer | None]
_STOP: Batch = ("", None)


def wall_clock_us() -> int:
    return time.time_ns() // 1000


@dataclass
class JournalStats:
    """Counters for metrics; written by one thread each (see the module docstring)."""

    batches_submitted: int = 0
    batches_dropped: int = 0  # loop thread
    rows_dropped: int = 0  # loop thread
    rows_written: int = 0  # writer thread
    files_completed: int = 0  # writer thread
    drops_reported: int = 0  # writer thread: rows covered by journal_drop rows
    write_errors: int = 0  # writer thread


class JournalWriter:
    def __init__(
        self,
        directory: str | os.PathLike[str],
        node: str,
        fmt: str | None = None,
        rotate_s: float = 60.0,
        rotate_bytes: int = 64 * 1024 * 1024,
        max_batches: int = 16,  # of up to 32768 rows (the recorder's batch size): ~0.5 M rows of slack
        clock_us: Callable[[], int] = wall_clock_us,
        tick_s: float = 0.5,
    ) -> None:
        self.directory = Path(directory)
        self.node = node
        self.format = fmt or default_format()
        self.rotate_us = int(rotate_s * 1_000_000)
        self.rotate_bytes = rotate_bytes
        self.stats = JournalStats()
        self._clock = clock_us
        self._tick_s = tick_s
        self._queue: queue.Queue[Batch] = queue.Queue(maxsize=max_batches)
        self._files: dict[str, tuple[JournalFile, int, str]] = {}  # table -> (file, opened_us, partition)
        self._seq = 0
        self._thread: threading.Thread | None = None
        self._safe_node = "".join(c if c.isalnum() or c in "-_." else "_" for c in node)

    # -- loop thread -----------------------------------------------------------------------------------------

    def start(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        if self.format == PARQUET:
            warm_up()
        self._thread = threading.Thread(target=self._run, name="warrenmq-journal", daemon=True)
        self._thread.start()

    def submit(self, table: str, batch: RowBuffer) -> bool:
        """Queue one batch for writing; False (and counted) when the writer is behind. Never blocks."""
        try:
            self._queue.put_nowait((table, batch))
        except queue.Full:
            self.stats.batches_dropped += 1
            self.stats.rows_dropped += batch.rows
            return False
        self.stats.batches_submitted += 1
        return True

    def close(self, timeout_s: float = 30.0) -> None:
        """Write what is queued, complete every file and stop the thread (blocks; call at shutdown)."""
        if self._thread is None:
            return
        self._queue.put(_STOP)
        self._thread.join(timeout_s)
        self._thread = None

    # -- writer thread ---------------------------------------------------------------------------------------

    def _run(self) -> None:
        while True:
            try:
                table, batch = self._queue.get(timeout=self._tick_s)
            except queue.Empty:
                self._housekeeping()
                continue
            if batch is None:
                break
            self._write(table, batch)
            self._housekeeping()
        self._report_drops()
        for table in list(self._files):
            self._complete(table)

    def _housekeeping(self) -> None:
        self._report_drops()
        now = self._clock()
        for table, (_file, opened_us, _partition) in list(self._files.items()):
            if now - opened_us >= self.rotate_us:
                self._complete(table)

    def _report_drops(self) -> None:
        stats = self.stats
        lost = stats.rows_dropped - stats.drops_reported
        if lost <= 0:
            return
        stats.drops_reported += lost
        row: list[Any] = [None] * row_width(EVENTS)
        row[0], row[1], row[14], row[15] = self._clock() * 1000, JOURNAL_DROP, "backpressure", lost
        self._write(EVENTS, batch_of(EVENTS, [row]))

    def _write(self, table: str, batch: RowBuffer) -> None:
        if table not in TABLES or not batch.rows:
            return
        try:
            file = self._file_for(table, batch.first_ts())
            file.write(batch)
            recycle(batch)
            self.stats.rows_written += batch.rows
            if file.size() >= self.rotate_bytes:
                self._complete(table)
        except Exception:  # a full disk must not kill the thread: count, log once per batch, go on
            self.stats.write_errors += 1
            log.exception("journal_write_failed", table=table, rows=batch.rows)

    def _file_for(self, table: str, ts_ns: int) -> JournalFile:
        ts_us = ts_ns // 1000
        partition = time.strftime("date=%Y-%m-%d/hour=%H", time.gmtime(ts_us / 1_000_000))
        current = self._files.get(table)
        if current is not None:
            if current[2] == partition:
                return current[0]
            self._complete(table)
        self._seq += 1
        name = f"{self._safe_node}-{ts_us}-{self._seq}.{self.format}"
        file = open_file(self.format, table, self.directory / table / partition / name, self.node)
        self._files[table] = (file, self._clock(), partition)
        return file

    def _complete(self, table: str) -> None:
        file = self._files.pop(table)[0]
        try:
            file.complete()
        except Exception:
            self.stats.write_errors += 1
            log.exception("journal_complete_failed", path=str(file.path))
            return
        if file.rows:
            self.stats.files_completed += 1
