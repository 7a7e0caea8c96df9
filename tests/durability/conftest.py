"""Brokers with a data directory, restarted between steps: a clean stop (SIGTERM) or a crash (SIGKILL)."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path

import pika
import pytest

from tests.conftest import BrokerProcess, start_broker_process


class DurableBroker:
    """One data directory and the broker process currently serving it."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self.process: BrokerProcess | None = None

    def start(self, *extra_args: str) -> BrokerProcess:
        assert self.process is None, "already running"
        self.process = start_broker_process(
            "--data-dir", str(self.data_dir), "--management-port", "-1", *extra_args
        )
        return self.process

    @property
    def recovered(self) -> dict[str, int]:
        assert self.process is not None
        recovered = self.process.ready["recovered"]
        assert isinstance(recovered, dict)
        return recovered

    def stop(self) -> int:
        """Clean shutdown: 320 to clients, pending writes committed."""
        assert self.process is not None
        code = self.process.stop(signal.SIGTERM)
        self.process = None
        return code

    def kill(self) -> None:
        """Crash: SIGKILL, nothing gets to run."""
        assert self.process is not None
        self.process.stop(signal.SIGKILL)
        self.process = None

    def restart(self, crash: bool = False) -> BrokerProcess:
        self.kill() if crash else self.stop()
        return self.start()

    def connect(self) -> pika.BlockingConnection:
        assert self.process is not None
        return pika.BlockingConnection(pika.URLParameters(self.process.url))


@pytest.fixture
def durable(tmp_path: Path) -> Iterator[DurableBroker]:
    broker = DurableBroker(tmp_path / "data")
    broker.start()
    yield broker
    if broker.process is not None:
        broker.stop()
