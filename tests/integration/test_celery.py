"""A real Celery task round trip through WarrenMQ: pyamqp transport, a worker thread, rpc:// results (which
ride on direct reply-to)."""

# celery is not annotated.
# mypy: disable-error-code="no-untyped-call,misc,untyped-decorator,unused-ignore"

from __future__ import annotations

from typing import Any

import pytest

celery = pytest.importorskip("celery")
from celery.contrib.testing.worker import start_worker  # noqa: E402

TIMEOUT_S = 15.0


def test_celery_task_round_trip_with_rpc_results(amqp_url: str, unique: str) -> None:
    app = celery.Celery(unique, broker=amqp_url.replace("amqp://", "pyamqp://"), backend="rpc://")
    app.conf.update(
        task_default_queue=f"{unique}-tasks",
        broker_connection_retry_on_startup=False,
        worker_hijack_root_logger=False,
        result_expires=60,
        # The worker thread notices shutdown at its next drain timeout: 1 s without heartbeats, 10 s with.
        broker_heartbeat=0,
    )

    @app.task(name=f"{unique}.add")
    def add(x: int, y: int) -> int:
        return x + y

    with start_worker(app, pool="solo", perform_ping_check=False, shutdown_timeout=TIMEOUT_S):
        result: Any = add.delay(2, 3)
        assert result.get(timeout=TIMEOUT_S) == 5
