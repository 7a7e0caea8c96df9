"""Paging under memory pressure, with real clients: a backlog twice the memory watermark is published with
confirms into a queue without consumers on a broker with a data directory; past the paging ratio the bodies go
to spill files, so RSS stays under the watermark and no publish stays blocked; then every message comes back,
in order and intact, and the spill files are gone."""

from __future__ import annotations

import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pika
import psutil
import pytest

from tests.hardening.served import Served, serve

WATERMARK_BYTES = 160 * 1024 * 1024
SIZE = 100_000
COUNT = 3_400  # 340 MB of bodies: over twice the watermark


def _body(index: int) -> bytes:
    return f"{index:08d}".encode() * (SIZE // 8)


def _per_object_metrics(broker: Served) -> dict[str, float]:
    """The backlog queue's samples from rabbitmq_prometheus' /metrics/per-object."""
    url = f"http://127.0.0.1:{broker.ready['prometheus_port']}/metrics/per-object"
    with urllib.request.urlopen(url, timeout=10) as response:
        text = response.read().decode()
    samples = {}
    for line in text.splitlines():
        if 'queue="backlog"' in line and not line.startswith("#"):
            name = line.split("{", 1)[0]
            samples[name] = float(line.rsplit(" ", 1)[1])
    return samples


@pytest.fixture
def paging_broker(tmp_path: Path) -> Iterator[tuple[Served, Path]]:
    data_dir = tmp_path / "data"
    served = serve(
        tmp_path,
        f"vm_memory_high_watermark.absolute = {WATERMARK_BYTES}\n"
        "vm_memory_high_watermark_paging_ratio = 0.5\n",
        env={"WARRENMQ_DATA_DIR": str(data_dir)},
    )
    yield served, data_dir
    served.stop()


@pytest.mark.slow
def test_a_backlog_twice_the_watermark_is_paged_to_disk_and_comes_back_intact(
    paging_broker: tuple[Served, Path],
) -> None:
    broker, data_dir = paging_broker
    process = psutil.Process(broker.process.pid)
    blocked: list[str] = []
    connection = pika.BlockingConnection(
        pika.ConnectionParameters("127.0.0.1", broker.port, heartbeat=0, blocked_connection_timeout=None)
    )
    connection.add_on_connection_blocked_callback(lambda _c, frame: blocked.append(frame.method.reason))
    channel = connection.channel()
    channel.confirm_delivery()
    channel.queue_declare("backlog")
    peak_rss = 0
    started = time.monotonic()
    for index in range(COUNT):
        channel.basic_publish("", "backlog", _body(index))  # confirmed: raises on a nack
        if index % 50 == 0:
            peak_rss = max(peak_rss, process.memory_info().rss)
    elapsed = time.monotonic() - started
    peak_rss = max(peak_rss, process.memory_info().rss)

    status, queue = broker.http("/api/queues/%2F/backlog")
    assert status == 200
    assert queue["messages"] == COUNT
    assert queue["message_bytes"] == COUNT * SIZE
    assert queue["messages_paged_out"] > COUNT // 2
    assert queue["message_bytes_paged_out"] == queue["messages_paged_out"] * SIZE
    assert queue["message_bytes_ram"] == queue["message_bytes"] - queue["message_bytes_paged_out"]
    assert queue["message_bytes_ram"] < WATERMARK_BYTES
    metrics = _per_object_metrics(broker)
    assert metrics["rabbitmq_queue_messages_paged_out"] == queue["messages_paged_out"]
    assert metrics["rabbitmq_queue_messages_paged_out_bytes"] == queue["message_bytes_paged_out"]
    assert metrics["rabbitmq_queue_messages_bytes"] == COUNT * SIZE
    spilled = sum(path.stat().st_size for path in (data_dir / "spill").iterdir())
    assert spilled >= queue["message_bytes_paged_out"]
    # The backlog outgrew the watermark; the broker did not (the memory alarm may have flickered while
    # paging caught up, but every publish was confirmed).
    assert COUNT * SIZE > 2 * WATERMARK_BYTES
    assert peak_rss < 1.2 * WATERMARK_BYTES, f"peak RSS {peak_rss}"
    print(
        f"backlog {COUNT * SIZE / 2**20:.0f} MiB in {elapsed:.1f} s, peak RSS {peak_rss / 2**20:.0f} MiB, "
        f"paged {queue['messages_paged_out']} messages, blocked {len(blocked)} times"
    )

    for index in range(COUNT):
        method, _, body = channel.basic_get("backlog", auto_ack=True)
        assert method is not None, index
        assert body == _body(index), index
    assert channel.queue_declare("backlog", passive=True).method.message_count == 0
    assert list((data_dir / "spill").iterdir()) == []
    status, queue = broker.http("/api/queues/%2F/backlog")
    assert (queue["messages_paged_out"], queue["message_bytes"]) == (0, 0)
    connection.close()


def _wait_paged(broker: Served, queue: str) -> dict[str, Any]:
    deadline = time.monotonic() + 10
    while True:
        _status, body = broker.http(f"/api/queues/%2F/{queue}")
        if body["messages_paged_out"] > 0 or time.monotonic() > deadline:
            return dict(body)
        time.sleep(0.05)


def test_paged_persistent_messages_survive_a_crash_from_the_store(tmp_path: Path) -> None:
    # A ratio of 1% of a 1 GB watermark: this broker pages from the first sample. The spill is a cache; the
    # durable copies are the store's, so a SIGKILL loses nothing confirmed, and the stale spill is cleared.
    data_dir = tmp_path / "data"
    conf = "vm_memory_high_watermark.absolute = 1GB\nvm_memory_high_watermark_paging_ratio = 0.01\n"
    env = {"WARRENMQ_DATA_DIR": str(data_dir)}
    for name in ("first", "second"):
        (tmp_path / name).mkdir()
    first = serve(tmp_path / "first", conf, env=env)
    try:
        with pika.BlockingConnection(pika.ConnectionParameters("127.0.0.1", first.port)) as connection:
            channel = connection.channel()
            channel.confirm_delivery()
            channel.queue_declare("durable-backlog", durable=True)
            persistent = pika.BasicProperties(delivery_mode=2)
            for index in range(300):
                channel.basic_publish("", "durable-backlog", _body(index)[:10_000], persistent)
            queue = _wait_paged(first, "durable-backlog")
            assert queue["messages_paged_out"] > 0
            assert queue["messages_persistent"] == 300
            assert queue["message_bytes_persistent"] == 300 * 10_000
    finally:
        first.process.kill()
        first.process.wait()
    assert list((data_dir / "spill").iterdir())  # left behind by the crash

    second = serve(tmp_path / "second", conf, env=env)
    try:
        assert second.ready["recovered"]["messages"] == 300
        with pika.BlockingConnection(pika.ConnectionParameters("127.0.0.1", second.port)) as connection:
            channel = connection.channel()
            for index in range(300):
                method, _, body = channel.basic_get("durable-backlog", auto_ack=True)
                assert method is not None, index
                assert body == _body(index)[:10_000], index
    finally:
        second.stop()
