"""Resource alarms with real clients: the memory watermark stops a publisher flooding a queue without
consumers (connection.blocked, RSS near the watermark), a purge clears it and nothing confirmed is lost; the
disk alarm blocks publishers but not consumers; both show in the management API, the health check and
`rabbitmq-diagnostics check_local_alarms`."""

from __future__ import annotations

import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pika
import psutil
import pytest
from pika.adapters.select_connection import SelectConnection

from tests.hardening.served import Served, diagnostics, serve

WATERMARK_BYTES = 200 * 1024 * 1024
BODY = b"x" * 100_000
DEADLINE_S = 90.0
CLIENT_BUFFER_BYTES = 1024 * 1024


class FloodPublisher:
    """pika's asynchronous adapter, publishing with confirms as fast as the socket takes it whenever the
    broker has not blocked the connection; once the test has purged (``purged``) and the broker unblocks, a
    last batch. Counts every ack and nack, and when it was last blocked."""

    def __init__(self, port: int, queue: str, first: int = 0) -> None:
        self.queue = queue
        self.first = first  # messages published whatever the stage
        self.published = 0
        self.acked = 0
        self.nacked = 0
        self.blocked_reasons: list[str] = []
        self.unblocked = False
        self.after_unblock = 0
        self.channel: Any = None
        self.stage = "flood"  # flood <-> blocked, then (purged) -> resumed
        self.purged = False
        self.blocked_since = 0.0
        params = pika.ConnectionParameters("127.0.0.1", port, heartbeat=0, blocked_connection_timeout=None)
        self.connection = SelectConnection(params, on_open_callback=self._opened)
        self.connection.add_on_connection_blocked_callback(self._blocked)
        self.connection.add_on_connection_unblocked_callback(self._unblocked)

    def _opened(self, connection: SelectConnection) -> None:
        connection.channel(on_open_callback=self._channel)

    def _channel(self, channel: Any) -> None:
        self.channel = channel
        channel.confirm_delivery(self._confirmed)
        channel.queue_declare(self.queue, callback=lambda _frame: self._publish_batch())

    def _confirmed(self, frame: Any) -> None:
        method = frame.method
        count = (method.delivery_tag - (self.acked + self.nacked)) if method.multiple else 1
        if isinstance(method, pika.spec.Basic.Ack):
            self.acked += count
        else:
            self.nacked += count

    def _publish_batch(self) -> None:
        if self.published < self.first:
            self.channel.basic_publish("", self.queue, BODY)
            self.published += 1
        elif self.stage == "flood":
            # As fast as TCP takes it: pika's own buffer is kept small, so that what the broker has not read
            # waits in socket buffers (where TCP backpressure holds it), not in an ever-growing client buffer.
            if self.connection._get_write_buffer_size() < CLIENT_BUFFER_BYTES:
                for _ in range(20):
                    self.channel.basic_publish("", self.queue, BODY)
                    self.published += 1
            # Yield to the ioloop so that the broker's connection.blocked can be read between batches.
            self.connection.ioloop.call_later(0, self._publish_batch)
        elif self.stage == "resumed" and self.after_unblock < 20:
            for _ in range(20):
                self.channel.basic_publish("", self.queue, BODY)
                self.published += 1
                self.after_unblock += 1
            self.connection.ioloop.call_later(0, self._publish_batch)

    def _blocked(self, _connection: Any, frame: Any) -> None:
        self.blocked_reasons.append(frame.method.reason)
        self.stage = "blocked"
        self.blocked_since = time.monotonic()

    def _unblocked(self, _connection: Any, _frame: Any) -> None:
        # Before the purge the alarm may clear for a moment (freed buffers returned to the OS): keep flooding.
        self.unblocked = self.purged
        self.stage = "resumed" if self.purged else "flood"
        self._publish_batch()

    def held_blocked(self, seconds: float) -> bool:
        """Blocked, and for ``seconds`` already: the backlog alone now holds the alarm."""
        return self.stage == "blocked" and time.monotonic() - self.blocked_since >= seconds

    def run_until(self, done: Any, timeout_s: float = DEADLINE_S) -> None:
        """Drive the ioloop until ``done()``; fail when ``timeout_s`` passes first."""
        deadline = time.monotonic() + timeout_s

        def check() -> None:
            if done() or time.monotonic() > deadline:
                self.connection.ioloop.stop()
            else:
                self.connection.ioloop.call_later(0.02, check)

        self.connection.ioloop.call_later(0.02, check)
        self.connection.ioloop.start()
        assert done(), f"timed out: published={self.published} acked={self.acked} stage={self.stage}"


def _gauges(broker: Served) -> dict[str, float]:
    """The unlabelled samples of rabbitmq_prometheus' /metrics."""
    url = f"http://127.0.0.1:{broker.ready['prometheus_port']}/metrics"
    with urllib.request.urlopen(url, timeout=10) as response:
        text = response.read().decode()
    return {
        line.split(" ", 1)[0]: float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line and not line.startswith("#") and "{" not in line
    }


@pytest.fixture
def memory_broker(tmp_path: Path) -> Iterator[Served]:
    served = serve(tmp_path, f"vm_memory_high_watermark.absolute = {WATERMARK_BYTES}\n")
    yield served
    served.stop()


@pytest.mark.slow
def test_flood_stops_at_the_memory_watermark_and_resumes_after_a_purge(memory_broker: Served) -> None:
    broker = memory_broker
    process = psutil.Process(broker.process.pid)
    publisher = FloodPublisher(broker.port, "flood")
    peak_rss = 0

    def held_blocked_sampling_rss() -> bool:
        nonlocal peak_rss
        peak_rss = max(peak_rss, process.memory_info().rss)
        return publisher.held_blocked(1.0)

    # The publisher keeps pushing whenever it is not blocked, until the backlog alone holds the alarm; the
    # broker stops reading it, so what it writes meanwhile waits in socket buffers, not in the broker.
    publisher.run_until(held_blocked_sampling_rss)
    assert set(publisher.blocked_reasons) == {"low on memory"}
    assert peak_rss <= 1.5 * WATERMARK_BYTES, f"peak RSS {peak_rss} > 1.5 x {WATERMARK_BYTES}"

    status, nodes = broker.http("/api/nodes")
    assert status == 200
    assert (nodes[0]["mem_alarm"], nodes[0]["mem_limit"], nodes[0]["disk_free_alarm"]) == (
        True,
        WATERMARK_BYTES,
        False,
    )
    status, health = broker.http("/api/health/checks/alarms")
    assert (status, health["status"], health["alarms"][0]["resource"]) == (503, "failed", "memory")
    assert _gauges(broker)["rabbitmq_alarms_memory_used_watermark"] == 1.0
    assert _gauges(broker)["rabbitmq_resident_memory_limit_bytes"] == WATERMARK_BYTES
    alarms = diagnostics(broker, "-q", "check_local_alarms")
    assert alarms.returncode != 0
    assert "low on memory" in alarms.stdout
    assert "memory resource limit alarm set" in broker.log()

    # A connection that only manages or consumes is not blocked: it purges the backlog.
    admin = pika.BlockingConnection(pika.ConnectionParameters("127.0.0.1", broker.port, heartbeat=0))
    publisher.purged = True
    purged = admin.channel().queue_purge("flood").method.message_count
    assert purged > 0

    publisher.run_until(
        lambda: publisher.after_unblock >= 20 and publisher.acked + publisher.nacked >= publisher.published
    )
    assert publisher.unblocked
    assert publisher.nacked == 0
    assert publisher.acked == publisher.published
    # Every confirmed message is either among those purged or still in the queue.
    remaining = admin.channel().queue_declare("flood", passive=True).method.message_count
    assert purged + remaining == publisher.published
    assert remaining >= 20  # at least the batch published once unblocked after the purge
    # (Whether the alarm is in effect again now depends on how much the socket buffers held: not checked.)
    assert "memory resource limit alarm cleared" in broker.log()
    print(f"peak RSS {peak_rss / 2**20:.0f} MiB, purged {purged}, remaining {remaining}")
    admin.close()
    publisher.connection.close()


@pytest.fixture
def disk_broker(tmp_path: Path) -> Iterator[Served]:
    # A limit no disk can meet: the disk alarm is in effect from the first sample.
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    served = serve(
        tmp_path, "disk_free_limit.absolute = 1000000GB\n", env={"WARRENMQ_DATA_DIR": str(data_dir)}
    )
    yield served
    served.stop()


def test_disk_alarm_blocks_publishers_but_consumers_keep_draining(disk_broker: Served) -> None:
    broker = disk_broker
    consumer_conn = pika.BlockingConnection(pika.ConnectionParameters("127.0.0.1", broker.port))
    consumer = consumer_conn.channel()
    consumer.queue_declare("drain")
    # Nothing is sent at connection.open (as RabbitMQ); the first publish is read and routed, then the
    # connection gets connection.blocked and is no longer read.
    publisher = FloodPublisher(broker.port, "drain", first=1)
    publisher.run_until(lambda: publisher.acked == 1 and publisher.stage == "blocked", timeout_s=10)
    assert publisher.blocked_reasons == ["low on disk"]
    # The API shows the publisher blocked (the broker no longer reads it) and the consumer running.
    _status, connections = broker.http("/api/connections")
    assert sorted(connection["state"] for connection in connections) == ["blocked", "running"]
    # The consumer's connection still reads: it gets the message and its ack is processed.
    method, _props, body = next(consumer.consume("drain", inactivity_timeout=5))
    assert body == BODY
    consumer.basic_ack(method.delivery_tag)
    consumer.cancel()
    assert consumer.queue_declare("drain", passive=True).method.message_count == 0

    status, nodes = broker.http("/api/nodes")
    assert (nodes[0]["disk_free_alarm"], nodes[0]["mem_alarm"]) == (True, False)
    assert nodes[0]["disk_free_limit"] == 1_000_000 * 10**9
    gauges = _gauges(broker)
    assert (
        gauges["rabbitmq_alarms_free_disk_space_watermark"],
        gauges["rabbitmq_alarms_memory_used_watermark"],
    ) == (
        1.0,
        0.0,
    )
    status, health = broker.http("/api/health/checks/local-alarms")
    assert status == 503
    assert health["alarms"] == [{"node": broker.http("/api/overview")[1]["node"], "resource": "disk"}]
    alarms = diagnostics(broker, "check_local_alarms")
    assert alarms.returncode != 0
    assert "low on disk" in alarms.stdout
    assert "disk resource limit alarm set" in broker.log()
    consumer_conn.close()
