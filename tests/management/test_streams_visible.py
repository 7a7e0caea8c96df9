"""Stream queues in the management API and Prometheus of a running `warrenmq serve`: type stream, the log's
messages and bytes, segments, committed and first offsets, readers; and stream policies (max-length-bytes,
max-age, stream-max-segment-size-bytes) reaching a running stream at once, as rabbit_stream_queue applies a
policy change to its writer's retention."""

from __future__ import annotations

import urllib.request
from collections.abc import Iterator
from typing import Any

import pika
import pytest

from broker.core.policies.policies import parse_policy
from broker.testing.embed import BrokerThread
from tests.conftest import BrokerProcess, start_broker_process
from tests.management.test_policies_live import connect, count, http

# As osiris counts a segment file, each 10-byte message below is a chunk of about 150 bytes (108 right
# after a segment's snapshot): two fill a 300-byte segment, and each later segment's snapshot takes an offset.
SEGMENT_OF_TWO = 300
STREAM = {"x-queue-type": "stream", "x-stream-max-segment-size-bytes": SEGMENT_OF_TWO}


@pytest.fixture
def broker() -> Iterator[BrokerProcess]:
    process = start_broker_process("--data-dir", "none", "--prometheus-port", "0")
    yield process
    process.stop()


def _fill(channel: Any, queue: str, count_: int) -> None:
    if not channel._delivery_confirmation:
        channel.confirm_delivery()
    for index in range(count_):
        channel.basic_publish("", queue, b"%010d" % index)  # 10 bytes: two entries close a segment


def test_a_stream_shows_its_log_segments_and_offsets(broker: BrokerProcess) -> None:
    connection = connect(broker)
    channel = connection.channel()
    channel.queue_declare("visible", durable=True, arguments=STREAM)
    _fill(channel, "visible", 5)  # segments [0, 1] [snapshot 2: 3, 4] [snapshot 5: 6]
    reader = connection.channel()
    reader.basic_qos(prefetch_count=2)
    reader.basic_consume("visible", lambda *_: None, consumer_tag="r1", arguments={"x-stream-offset": 3})
    connection.process_data_events(time_limit=0.2)
    status, queue = http(broker, "GET", "/api/queues/%2F/visible")
    assert status == 200
    assert queue["type"] == "stream"
    assert (queue["messages"], queue["messages_ready"], queue["messages_unacknowledged"]) == (5, 5, 2)
    assert queue["message_bytes"] == 50
    assert (queue["segments"], queue["committed_offset"], queue["first_offset"]) == (3, 6, 0)
    assert queue["readers"] == {"r1": 5}
    assert queue["leader"] == queue["node"]
    assert queue["members"] == [queue["node"]]
    _status, listed = http(broker, "GET", "/api/queues/%2F?columns=name,type,messages_ready")
    assert {"name": "visible", "type": "stream", "messages_ready": 5} in listed
    metrics = urllib.request.urlopen(
        f"http://127.0.0.1:{broker.ready['prometheus_port']}/metrics/per-object", timeout=10
    ).read()
    assert 'rabbitmq_queue_messages_ready{queue="visible",vhost="/"} 5.0' in metrics.decode()
    connection.close()


def test_a_max_length_bytes_policy_trims_a_running_stream_by_whole_segments(broker: BrokerProcess) -> None:
    connection = connect(broker)
    channel = connection.channel()
    channel.queue_declare("trimmed", durable=True, arguments=STREAM)
    _fill(channel, "trimmed", 6)  # segments [0, 1] [2: 3, 4] [5: 6, 7] of 310, 370 and 370 bytes
    body = {"pattern": "^trimmed$", "definition": {"max-length-bytes": 500}, "apply-to": "queues"}
    assert http(broker, "PUT", "/api/policies/%2F/trim", body)[0] == 201
    _status, queue = http(broker, "GET", "/api/queues/%2F/trimmed")
    assert (queue["policy"], queue["messages"], queue["segments"], queue["first_offset"]) == ("trim", 2, 1, 5)
    assert count(channel, "trimmed") == 2
    connection.close()


def test_max_age_and_segment_size_policies_apply_to_a_running_stream() -> None:
    with BrokerThread(manual_clock=True) as broker:
        connection = pika.BlockingConnection(pika.URLParameters(broker.url))
        channel = connection.channel()
        channel.queue_declare("aged", durable=True, arguments={"x-queue-type": "stream"})
        _fill(channel, "aged", 4)  # one segment (the default size is 500 MB)
        size = parse_policy(
            "/",
            "size",
            {"pattern": "^aged$", "definition": {"stream-max-segment-size-bytes": SEGMENT_OF_TWO}},
        )
        broker.call(broker.embedded.broker.put_policy, size)
        # The active segment is over the new size: it closes, then [4: 5, 6] [7: 8, 9].
        _fill(channel, "aged", 4)
        stream = broker.embedded.broker.vhosts["/"].queues["aged"].features
        assert [segment.first_offset for segment in stream.log.segments] == [0, 4, 7]  # type: ignore[union-attr]
        broker.advance_clock(11.0)
        _fill(channel, "aged", 1)  # at 11 s: [7: 8, 9] is full, so a segment opens at 10 (message at 11)
        assert count(channel, "aged") == 9
        age = parse_policy("/", "age", {"pattern": "^aged$", "definition": {"max-age": "10s"}, "priority": 1})
        broker.call(broker.embedded.broker.put_policy, age)  # the higher priority replaces "size"
        # Every closed segment is older than 10 s; the active one ([8], opened at 11 s) stays.
        assert count(channel, "aged") == 1
        connection.close()
