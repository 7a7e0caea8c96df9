"""asyncpg behind the synchronous `Store` protocol: a private event loop in a daemon thread owned by the
store.

The `Store` interface is synchronous: ``apply`` runs on the StoreWriter's thread, recovery and stream reads
on the broker's event loop thread. asyncpg is asyncio-only, and its connections belong to the loop they were
opened on. So the store starts its own loop in its own thread (``warrenmq-postgres``) and every call
submits a coroutine to it and waits for the result (`LoopThread.run`). The broker's loop never runs an
asyncpg coroutine, and a slow PostgreSQL blocks only the caller: the writer thread (as a slow fsync does
with SQLite) or, for a stream read from a closed segment, the event loop for one query (as a file read does
with SQLite). Two connections live on the private loop: one for the writer's transactions, one for reads,
so a reader never waits behind a group commit.

This is the one module of broker.storage that imports asyncio (the import-linter contract "storage depends
inward only" names it as its only exception): the loop is the store's, never the broker's.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


class LoopThread:
    """One event loop running forever in one daemon thread; `run` is callable from any other thread."""

    def __init__(self, name: str = "warrenmq-postgres") -> None:
        self.loop = asyncio.new_event_loop()
        self._started = threading.Event()
        self._thread = threading.Thread(target=self._main, name=name, daemon=True)
        self._thread.start()
        self._started.wait()

    def _main(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.call_soon(self._started.set)
        self.loop.run_forever()

    def run(self, coroutine: Coroutine[Any, Any, T], timeout_s: float | None = None) -> T:
        """Run ``coroutine`` on the private loop and wait for its result (its exception is raised here)."""
        if threading.current_thread() is self._thread or self.loop.is_closed():
            coroutine.close()
            raise RuntimeError("LoopThread.run: the loop is closed, or this is its own thread (a deadlock)")
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout_s)

    def stop(self) -> None:
        if self.loop.is_closed():
            return
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join()
        self.loop.close()
