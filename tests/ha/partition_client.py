"""The clients of the partition tests, run as a process inside the clients' network namespace
(tests/ha/netns.py): a publisher with confirms and a consumer with acks, each on its own pika connection
through the host list of both nodes, recording every operation and its outcome as JSON lines for
tests/ha/checker.py:

    {"op": "send", "id": 7, "t": ...}            sent (persistent, to the durable queue)
    {"op": "ok" | "nack" | "lost", "id": 7, ...}  confirmed, nacked, or the connection lost before an answer
    {"op": "deliver", "id": 7, "redelivered": false, "conn": 3, "t": ...}
    {"op": "connect", "who": "publisher" | "consumer", "host": ..., "t": ...}
    {"op": "stopped", "who": "publisher", "t": ...}  publishing has stopped: no send or confirm after it

The consumer leaves every HOLD_EVERY-th message unacked on its connection (until that connection is lost), so
failovers have unacked messages to redeliver. Publishing stops when the file ``<out>.stop-publishing``
appears, consuming when ``<out>.stop`` does. Wall-clock times (``time.time()``), comparable with the nodes'
log lines.

    python -m tests.ha.partition_client OUT HOST:PORT [HOST:PORT ...]
"""

from __future__ import annotations

import json
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pika
import pika.exceptions

QUEUE = "partitions"
HOLD_EVERY = 97
PERSISTENT = pika.BasicProperties(delivery_mode=2)
LOST = (pika.exceptions.AMQPError, OSError)
# A client learns of a silent link through AMQP heartbeats (RabbitMQ closes after two missed): 2 s here,
# so a cut connection is given up within about 4-6 s instead of the default 60 s.
HEARTBEAT_S = 2


class Recorder:
    def __init__(self, path: Path) -> None:
        self._file = path.open("a", buffering=1)
        self._lock = threading.Lock()

    def __call__(self, op: str, **fields: Any) -> None:
        line = json.dumps({"op": op, "t": time.time(), **fields})
        with self._lock:
            self._file.write(line + "\n")


def _parameters(hosts: list[str]) -> list[pika.ConnectionParameters]:
    out = []
    for host in hosts:
        address, port = host.rsplit(":", 1)
        out.append(
            pika.ConnectionParameters(
                address,
                int(port),
                connection_attempts=1,
                socket_timeout=2,
                blocked_connection_timeout=10,
                heartbeat=HEARTBEAT_S,
            )
        )
    return out


def _connect(hosts: list[str], record: Recorder, who: str) -> pika.BlockingConnection:
    connection = pika.BlockingConnection(_parameters(hosts))
    record("connect", who=who, host=connection._impl.params.host)
    return connection


def publish(hosts: list[str], record: Recorder, stop: Path) -> None:
    next_id = 0
    while not stop.exists():
        try:
            connection = _connect(hosts, record, "publisher")
        except LOST:
            time.sleep(0.05)  # pika's own retry pace: every host refused or timed out
            continue
        in_flight: int | None = None
        try:
            channel = connection.channel()
            channel.confirm_delivery()
            channel.queue_declare(QUEUE, durable=True)
            while not stop.exists():
                in_flight, next_id = next_id, next_id + 1
                record("send", id=in_flight)
                try:
                    channel.basic_publish("", QUEUE, str(in_flight).encode(), PERSISTENT)
                except pika.exceptions.NackError:
                    record("nack", id=in_flight)
                else:
                    record("ok", id=in_flight)
                in_flight = None
            connection.close()
        except LOST as error:
            if in_flight is not None:
                record("lost", id=in_flight, error=type(error).__name__)
    record("stopped", who="publisher")  # nothing more will be sent or confirmed


def consume(hosts: list[str], record: Recorder, stop: Path) -> None:
    number = 0
    held: set[int] = set()
    while not stop.exists():
        try:
            connection = _connect(hosts, record, "consumer")
        except LOST:
            time.sleep(0.05)
            continue
        number += 1
        try:
            channel = connection.channel()
            channel.basic_qos(prefetch_count=500)
            channel.queue_declare(QUEUE, durable=True)
            for method, _, body in channel.consume(QUEUE, inactivity_timeout=0.1):
                if stop.exists():
                    break
                if method is None:
                    continue
                message_id = int(body)
                record("deliver", id=message_id, redelivered=bool(method.redelivered), conn=number)
                if message_id % HOLD_EVERY == 0 and message_id not in held:
                    held.add(message_id)  # unacked until this connection is lost
                else:
                    channel.basic_ack(method.delivery_tag)
            connection.close()
        except LOST:
            continue


def main(argv: list[str]) -> int:
    out = Path(argv[0])
    hosts = argv[1:]
    record = Recorder(out)
    stop_publishing = out.with_name(out.name + ".stop-publishing")
    stop = out.with_name(out.name + ".stop")
    threads = [
        threading.Thread(target=publish, args=(hosts, record, stop_publishing), daemon=True),
        threading.Thread(target=consume, args=(hosts, record, stop), daemon=True),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
