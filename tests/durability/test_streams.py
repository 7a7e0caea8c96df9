"""Stream queues across restarts: after a clean stop and after kill -9 every confirmed message is in the
log at the offset it had, offsets stay contiguous within a segment (each later segment's tracking snapshot
takes one offset, as osiris), and transient messages are kept as RabbitMQ streams keep every message."""

from __future__ import annotations

import itertools
import threading
import time
from typing import Any

import pika
import pika.exceptions
import pytest

from tests.durability.conftest import DurableBroker

STREAM = {"x-queue-type": "stream"}
QUEUE = "durable-stream"

pytestmark = pytest.mark.slow


def _replay(durable: DurableBroker) -> list[tuple[int, str]]:
    """Every (offset, body) from ``first``, read until the log's count is reached."""
    connection = durable.connect()
    ch = connection.channel()
    count = ch.queue_declare(QUEUE, passive=True).method.message_count
    ch.basic_qos(prefetch_count=500)
    seen: list[tuple[int, str]] = []

    def on_message(c: Any, method: Any, props: Any, body: bytes) -> None:
        seen.append((props.headers["x-stream-offset"], body.decode()))
        c.basic_ack(method.delivery_tag, multiple=True)

    ch.basic_consume(QUEUE, on_message, arguments={"x-stream-offset": "first"})
    deadline = time.monotonic() + 10
    while len(seen) < count and time.monotonic() < deadline:
        connection.process_data_events(time_limit=0.1)
    connection.close()
    return seen


def test_stream_survives_a_clean_restart_with_offsets_and_transient_messages(durable: DurableBroker) -> None:
    connection = durable.connect()
    ch = connection.channel()
    ch.queue_declare(QUEUE, durable=True, arguments=STREAM)
    ch.confirm_delivery()
    for index in range(10):
        ch.basic_publish("", QUEUE, f"m{index}".encode(), pika.BasicProperties(delivery_mode=1 + index % 2))
    connection.close()
    before = _replay(durable)
    durable.restart()
    assert _replay(durable) == before == [(index, f"m{index}") for index in range(10)]


@pytest.mark.parametrize(
    "arguments",
    # Small segments: most are closed, sealed and read back from their files, not held in memory.
    [STREAM, {**STREAM, "x-stream-max-segment-size-bytes": 400}],
    ids=["one-segment", "small-segments"],
)
def test_confirmed_stream_messages_survive_kill_9_at_stable_offsets(
    durable: DurableBroker, arguments: dict[str, Any]
) -> None:
    connection = durable.connect()
    ch = connection.channel()
    ch.queue_declare(QUEUE, durable=True, arguments=arguments)
    ch.confirm_delivery()
    confirmed: list[str] = []
    for index in range(50):
        ch.basic_publish("", QUEUE, f"a{index}".encode())
        confirmed.append(f"a{index}")
    before = _replay(durable)
    assert process_alive(durable)
    killer = threading.Timer(0.5, durable.kill)
    killer.start()
    try:
        for index in range(1_000_000):
            ch.basic_publish("", QUEUE, f"b{index}".encode())
            confirmed.append(f"b{index}")
    except (pika.exceptions.AMQPError, OSError):
        pass  # the broker died: the message in flight is unconfirmed
    killer.join()
    durable.start()
    after = _replay(durable)
    offsets = [offset for offset, _body in after]
    steps = {later - earlier for earlier, later in itertools.pairwise(offsets)}
    # One segment: no gaps. Small segments (two or three messages): a gap of one offset at each roll.
    assert steps == ({1} if arguments is STREAM else {1, 2})
    assert after[: len(before)] == before
    assert set(confirmed) <= {body for _offset, body in after}
    assert len(confirmed) > 50, "nothing was confirmed while the kill came: the test proved nothing"


def process_alive(durable: DurableBroker) -> bool:
    return durable.process is not None and durable.process.process.poll() is None


def test_stream_is_kept_in_segments_that_retention_deletes_whole(durable: DurableBroker) -> None:
    connection = durable.connect()
    ch = connection.channel()
    args = {**STREAM, "x-stream-max-segment-size-bytes": 1600, "x-max-length-bytes": 4000}
    ch.queue_declare(QUEUE, durable=True, arguments=args)
    ch.confirm_delivery()
    # 10-byte bodies: as osiris counts its files, segments of 10 messages, 1618 bytes for the first and 1678
    # for the later ones (each opens with a snapshot taking an offset: they start at 10, 21 and 32).
    # Retention runs when a segment rolls (osiris): when message 30 opens the fourth, the newest 4000 bytes
    # hold the three newest segments, so the first goes; nothing rolls after, so the second stays.
    for index in range(40):
        ch.basic_publish("", QUEUE, f"m{index:09d}".encode())
    connection.close()
    assert list(durable.stream_segments().values()) == [[10, 21, 32]]
    if durable.store is None:  # SQLite: a segment file and its index each
        directories = list((durable.data_dir / "streams").iterdir())
        segments = sorted(path.name for path in directories[0].glob("*.segment"))
        assert sorted(path.name for path in directories[0].glob("*.index")) == [
            name.replace(".segment", ".index") for name in segments
        ]
    durable.restart(crash=True)
    after = _replay(durable)
    assert after == [(index + index // 10, f"m{index:09d}") for index in range(10, 40)]
    connection = durable.connect()
    connection.channel().queue_delete(QUEUE)
    connection.close()
    durable.stop()  # a clean stop commits what is pending
    assert durable.stream_segments() == {}


def test_with_fsync_batch_confirmed_stream_messages_survive_kill_9(durable: DurableBroker) -> None:
    """--fsync batch confirms once a commit's chunks are written to the OS (no fsync), as osiris confirms a
    written chunk: a process crash loses nothing confirmed."""
    durable.stop()
    durable.start("--fsync", "batch")
    connection = durable.connect()
    ch = connection.channel()
    ch.queue_declare(QUEUE, durable=True, arguments=STREAM)
    ch.confirm_delivery()
    confirmed: list[str] = []
    killer = threading.Timer(0.5, durable.kill)
    killer.start()
    try:
        for index in range(1_000_000):
            ch.basic_publish("", QUEUE, f"c{index}".encode())
            confirmed.append(f"c{index}")
    except (pika.exceptions.AMQPError, OSError):
        pass  # the broker died: the message in flight is unconfirmed
    killer.join()
    durable.start("--fsync", "batch")
    after = _replay(durable)
    assert [offset for offset, _body in after] == list(range(len(after)))
    assert confirmed == [body for _offset, body in after][: len(confirmed)]
    assert len(confirmed) > 0, "nothing was confirmed before the kill: the test proved nothing"
