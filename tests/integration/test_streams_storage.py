"""A stream's log through the store across embedded restarts: segments come back as they were written, and a
stream stored as message rows (before segment files) is read back at its offsets and moved to segments;
and each replay of a stream lands in the journal."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pika
import pyarrow.parquet as pq

from broker.storage.base import message_key
from broker.storage.memory import MemoryStore
from broker.testing.embed import BrokerThread
from tests.conftest import start_broker_process

# Two of these messages fill a segment as osiris counts its file (each is a chunk of about 170 bytes).
STREAM = {"x-queue-type": "stream", "x-stream-max-segment-size-bytes": 300}
# Segments [0, 1], [snapshot 2: 3, 4], [snapshot 5: 6]: the messages' offsets skip each snapshot's.
OFFSETS = [0, 1, 3, 4, 6]


def _replay(url: str, queue: str, count: int) -> list[tuple[int, bytes]]:
    connection = pika.BlockingConnection(pika.URLParameters(url))
    channel = connection.channel()
    channel.basic_qos(prefetch_count=10)
    seen: list[tuple[int, bytes]] = []

    def on_message(c: Any, method: Any, props: Any, body: bytes) -> None:
        seen.append((props.headers["x-stream-offset"], body))
        c.basic_ack(method.delivery_tag)

    channel.basic_consume(queue, on_message, arguments={"x-stream-offset": "first"})
    for _ in range(50):
        if len(seen) >= count:
            break
        connection.process_data_events(time_limit=0.1)
    connection.close()
    return seen


def _fill(url: str) -> None:
    connection = pika.BlockingConnection(pika.URLParameters(url))
    channel = connection.channel()
    channel.queue_declare("kept", durable=True, arguments=STREAM)
    channel.confirm_delivery()
    for index in range(5):
        channel.basic_publish("", "kept", b"m%d" % index, pika.BasicProperties(delivery_mode=1 + index % 2))
    connection.close()


def test_segments_come_back_with_their_boundaries() -> None:
    store = MemoryStore()
    with BrokerThread(store=store) as broker:
        _fill(broker.url)
    (queue_id,) = store.streams
    assert sorted(store.streams[queue_id]) == [0, 2, 5]
    with BrokerThread(store=store) as broker:
        assert _replay(broker.url, "kept", 5) == [(offset, b"m%d" % n) for n, offset in enumerate(OFFSETS)]
        stream = broker.embedded.broker.vhosts["/"].queues["kept"].features
        assert [segment.first_offset for segment in stream.log.segments] == [0, 2, 5]  # type: ignore[union-attr]
        assert stream.log.next_offset == 7  # type: ignore[union-attr]


def test_a_stream_stored_as_rows_is_read_back_and_moved_to_segments() -> None:
    store = MemoryStore()
    with BrokerThread(store=store) as broker:
        _fill(broker.url)
    (queue_id,) = store.streams
    # The layout before segment files: a row per entry keyed offset + 1, the append time in expires_at; the
    # offsets had no snapshot gaps then, and keep theirs.
    records = [record for segment in store.streams.pop(queue_id).values() for record in segment]
    for offset, (_o, appended, exchange, routing_key, header, body) in enumerate(records):
        key = message_key(queue_id, offset + 1)
        store.rows[key] = (key, exchange, routing_key, header, body, appended, 0)
    with BrokerThread(store=store) as broker:
        assert _replay(broker.url, "kept", 5) == [(index, b"m%d" % index) for index in range(5)]
    assert not store.rows
    assert [record[0] for records in store.streams[queue_id].values() for record in records] == [
        0,
        1,
        2,
        3,
        4,
    ]


def test_every_replay_of_a_stream_is_journaled_as_deliveries(tmp_path: Path) -> None:
    journal = tmp_path / "journal"
    broker = start_broker_process("--journal-dir", str(journal), "--journal-mode", "compact")
    try:
        connection = pika.BlockingConnection(pika.URLParameters(broker.url))
        channel = connection.channel()
        channel.queue_declare("journaled", durable=True, arguments={"x-queue-type": "stream"})
        channel.confirm_delivery()
        for index in range(3):
            channel.basic_publish("", "journaled", b"j%d" % index)
        connection.close()
        assert len(_replay(broker.url, "journaled", 3)) == 3
        assert len(_replay(broker.url, "journaled", 3)) == 3  # a second reader of the same entries
    finally:
        assert broker.stop() == 0  # the journal completes its files at shutdown
    rows = pq.read_table(journal / "deliveries").to_pylist()
    acked = [row for row in rows if row["queue"] == "journaled" and row["outcome"] == "ack"]
    assert len(acked) == 6
    assert len({row["msg_seq"] for row in acked}) == 3
