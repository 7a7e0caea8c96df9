"""Brokers with a data directory, restarted between steps: a clean stop (SIGTERM) or a crash (SIGKILL).

Every test on the ``durable`` fixture runs once per store: SQLite under the data directory, and PostgreSQL
(``--store``, a fresh database on the session's private cluster, tests/postgres; skipped when PostgreSQL is
not installed)."""

from __future__ import annotations

import asyncio
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pika
import pytest
from pika.exceptions import AMQPError

from tests.conftest import BrokerProcess, start_broker_process


class DurableBroker:
    """One data directory and the broker process currently serving it."""

    def __init__(self, data_dir: Path, store: str | None = None) -> None:
        self.data_dir = data_dir
        self.store = store  # a PostgreSQL DSN, or None: SQLite in data_dir
        self.process: BrokerProcess | None = None
        self.clients: list[pika.BlockingConnection] = []  # what connect() opened to the current process

    def start(self, *extra_args: str) -> BrokerProcess:
        assert self.process is None, "already running"
        store = ("--store", self.store) if self.store is not None else ()
        self.process = start_broker_process(
            "--data-dir", str(self.data_dir), *store, "--management-port", "-1", *extra_args
        )
        return self.process

    @property
    def recovered(self) -> dict[str, int]:
        assert self.process is not None
        recovered = self.process.ready["recovered"]
        assert isinstance(recovered, dict)
        return recovered

    def stop(self) -> int:
        """Clean shutdown: 320 to clients, pending writes committed. The test's clients answer the 320 with
        close-ok as a client's I/O loop would (a BlockingConnection only reads when called): the broker waits
        up to its 2 s grace for every close-ok before it unbinds, as RabbitMQ closes its readers on shutdown,
        and an idle BlockingConnection would otherwise hold every clean stop for all of it."""
        assert self.process is not None
        process = self.process.process
        process.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 10
        while process.poll() is None and time.monotonic() < deadline:
            self._answer_close()
            time.sleep(0.01)
        code = self.process.stop(signal.SIGTERM)
        self.process, self.clients = None, []
        return code

    def _answer_close(self) -> None:
        """Let each open client read what the broker sent (its connection.close, answered by pika)."""
        for client in self.clients:
            if client.is_open:
                try:
                    client.process_data_events(time_limit=0)
                except AMQPError:
                    pass  # closed by the broker (320), or its socket went: what a clean stop does to it

    def kill(self) -> None:
        """Crash: SIGKILL, nothing gets to run."""
        assert self.process is not None
        self.process.stop(signal.SIGKILL)
        self.process, self.clients = None, []

    def restart(self, crash: bool = False) -> BrokerProcess:
        self.kill() if crash else self.stop()
        return self.start()

    def stream_segments(self) -> dict[int, list[int]]:
        """Each stream queue's stored segments by first offset: SQLite's segment files under the data
        directory, or PostgreSQL's ``stream_segments`` rows."""
        if self.store is None:
            root = self.data_dir / "streams"
            directories = list(root.iterdir()) if root.is_dir() else []
            return {
                int(directory.name): sorted(int(path.stem) for path in directory.glob("*.segment"))
                for directory in directories
            }
        import asyncpg

        async def rows() -> list[tuple[int, int]]:
            connection = await asyncpg.connect(self.store)
            try:
                query = "SELECT queue_id, first_offset FROM stream_segments ORDER BY queue_id, first_offset"
                return [(row[0], row[1]) for row in await connection.fetch(query)]
            finally:
                await connection.close()

        segments: dict[int, list[int]] = {}
        for queue_id, first in asyncio.run(rows()):
            segments.setdefault(queue_id, []).append(first)
        return segments

    def connect(self) -> pika.BlockingConnection:
        assert self.process is not None
        client = pika.BlockingConnection(pika.URLParameters(self.process.url))
        self.clients.append(client)
        return client


@pytest.fixture(params=["sqlite", "postgresql"])
def durable(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[DurableBroker]:
    dsn = request.getfixturevalue("postgres_dsn") if request.param == "postgresql" else None
    broker = DurableBroker(tmp_path / "data", dsn)
    broker.start()
    yield broker
    if broker.process is not None:
        broker.stop()
