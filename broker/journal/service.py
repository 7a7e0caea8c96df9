"""The journal's lifetime on the loop: attach the recorder, flush it on a timer, close the writer at stop."""

from __future__ import annotations

import asyncio
import dataclasses
import socket
from collections.abc import Callable
from typing import Any

import structlog

from broker.config import JournalConfig
from broker.core.events.events import EventBus
from broker.journal.files import PARQUET, default_format, warm_up
from broker.journal.lane import PyLane
from broker.journal.recorder import JournalRecorder
from broker.journal.writer import JournalStats, JournalWriter

log = structlog.get_logger("warrenmq.journal")

FLUSH_INTERVAL_S = 1.0


def preload(config: JournalConfig) -> None:
    """Import the Parquet libraries (pyarrow, numpy, and the pandas pyarrow pulls in) before `serve` freezes
    the start-up objects for the garbage collector: loaded later, their ~10^5 objects stay young, and the
    first older-generation collection under traffic walks them all (tens of ms on the loop)."""
    if (config.format or default_format()) == PARQUET:
        warm_up()


class JournalService:
    def __init__(self, config: JournalConfig, events: EventBus, loop: asyncio.AbstractEventLoop) -> None:
        self.config = config
        self.loop = loop
        self.node = f"warrenmq@{socket.gethostname()}"
        self.writer = JournalWriter(
            config.directory,
            self.node,
            fmt=config.format,
            rotate_s=config.rotate_s,
            rotate_bytes=config.rotate_bytes,
        )
        self.recorder = JournalRecorder(
            self.writer,
            mode=config.mode,
            sample=config.sample,
            capture_routing=config.capture_routing,
            ids=events.ids,
            call_soon=loop.call_soon,
        )
        self._events = events
        self._detach: Callable[[], None] | None = None
        self._timer: asyncio.TimerHandle | None = None

    @property
    def stats(self) -> JournalStats:
        return self.writer.stats

    def metrics(self) -> dict[str, Any]:
        """The journal's settings and counters, for the management API's overview."""
        return {
            "directory": str(self.config.directory),
            "mode": self.config.mode,
            "format": self.writer.format,
            "sample": self.config.sample,
            "native_lane": not isinstance(self.recorder.lane, PyLane),
            **dataclasses.asdict(self.writer.stats),
        }

    def start(self) -> None:
        self.writer.start()
        self._detach = self.recorder.attach(self._events)
        self._timer = self.loop.call_later(FLUSH_INTERVAL_S, self._tick)
        log.info(
            "journal_started",
            directory=self.config.directory,
            mode=self.config.mode,
            format=self.writer.format,
            sample=self.config.sample,
            capture_routing=self.config.capture_routing,
            lane="python" if isinstance(self.recorder.lane, PyLane) else "native",
        )

    def _tick(self) -> None:
        self.recorder.flush()
        self._timer = self.loop.call_later(FLUSH_INTERVAL_S, self._tick)

    def stop(self) -> None:
        """Detach, hand over the last rows and wait for the writer to complete its files (shutdown only)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._detach is not None:
            self._detach()
            self._detach = None
        self.recorder.flush()
        self.writer.close()
        stats = self.writer.stats
        log.info(
            "journal_stopped",
            rows_written=stats.rows_written,
            files=stats.files_completed,
            batches_dropped=stats.batches_dropped,
            rows_dropped=stats.rows_dropped,
        )
