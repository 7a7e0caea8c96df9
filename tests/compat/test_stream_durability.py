"""Differential tests for a stream across a restart and under retention: a private RabbitMQ node (restarted
with its data dir, cleanly and by SIGKILL) against a WarrenMQ broker process with a data dir.

Stream filtering cannot be compared here: it is RabbitMQ 3.13 and the oracle is 3.10.8.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import aio_pika
import pika
import pytest

from tests.conftest import BrokerProcess, start_broker_process

from .rabbitmq_node import RabbitMQNode, rabbitmq_available
from .scenarios.kit import Ctx, pump

pytestmark = [pytest.mark.compat, pytest.mark.slow]

STREAM = {"x-queue-type": "stream"}


class Side:
    """One broker of the comparison, restartable with its data kept; ``segments(name)`` lists the first
    offsets of a stream's segment files, as their names give them on either broker."""

    def __init__(
        self, url: Callable[[], str], restart: Callable[[bool], None], segments: Callable[[str], list[int]]
    ) -> None:
        self.url = url
        self.restart = restart  # restart(kill): SIGKILL when kill, else a clean stop
        self.segments = segments


def _segment_firsts(directories: list[Path]) -> list[int]:
    assert len(directories) == 1, directories  # one stream per run
    return sorted(int(path.stem) for path in directories[0].glob("*.segment"))


@contextmanager
def _rabbitmq(tmp_path: Path) -> Iterator[Side]:
    if not rabbitmq_available():
        pytest.skip("no RabbitMQ to compare with")
    node = RabbitMQNode(tmp_path / "rabbitmq")
    node.start()

    def restart(kill: bool) -> None:
        if kill and node.process is not None:
            # The node leads its own process group (start_new_session): beam and its children die at once,
            # the mnesia and stream directories stay.
            os.killpg(node.process.pid, signal.SIGKILL)
            node.process.wait()
        node.stop()
        node.start()

    def segments(name: str) -> list[int]:
        # osiris names a stream's directory after the vhost-prefixed queue name and a timestamp.
        return _segment_firsts(list(node.base_dir.glob(f"mnesia/*/stream/__{name}_*")))

    try:
        yield Side(lambda: node.url, restart, segments)
    finally:
        node.stop()


@contextmanager
def _warrenmq(tmp_path: Path) -> Iterator[Side]:
    data_dir = str(tmp_path / "warrenmq")
    broker: BrokerProcess = start_broker_process("--data-dir", data_dir)

    def restart(kill: bool) -> None:
        nonlocal broker
        if kill:
            broker.process.kill()
            broker.process.wait()
        else:
            broker.stop()
        broker = start_broker_process("--data-dir", data_dir)

    def segments(_name: str) -> list[int]:
        return _segment_firsts([path for path in Path(data_dir, "streams").iterdir() if path.is_dir()])

    try:
        yield Side(lambda: broker.url, restart, segments)
    finally:
        broker.stop()


def _both(tmp_path: Path, run: Callable[[Side], Any]) -> tuple[Any, Any]:
    """``run`` on the oracle, then on WarrenMQ: (expected, observed)."""
    sides = []
    for name, factory in (("rabbitmq", _rabbitmq), ("warrenmq", _warrenmq)):
        with factory(tmp_path / name) as side:
            sides.append(run(side))
    return sides[0], sides[1]


def _declare(url: str, name: str, **extra: Any) -> int:
    """Declare (or re-declare) the stream; its declare-ok message_count."""
    connection = pika.BlockingConnection(Ctx(url, "x").params())
    try:
        ok = connection.channel().queue_declare(name, durable=True, arguments={**STREAM, **extra})
        return int(ok.method.message_count)
    finally:
        connection.close()


def _passive_count(url: str, name: str, attempts: int = 300) -> int:
    """declare-ok message_count of a passive declare (retried while a restarted stream comes back)."""
    for _ in range(attempts):
        connection = pika.BlockingConnection(Ctx(url, "x").params())
        try:
            return int(connection.channel().queue_declare(name, passive=True).method.message_count)
        except pika.exceptions.ChannelClosedByBroker:
            time.sleep(0.2)
        finally:
            if connection.is_open:
                connection.close()
    raise AssertionError(f"{name} did not come back")


def _publish(url: str, name: str, bodies: list[bytes]) -> None:
    """Publish with confirms, alternating transient and persistent: a stream keeps both."""
    connection = pika.BlockingConnection(Ctx(url, "x").params())
    try:
        ch = connection.channel()
        ch.confirm_delivery()
        for n, body in enumerate(bodies):
            ch.basic_publish("", name, body, pika.BasicProperties(delivery_mode=1 + n % 2), mandatory=True)
    finally:
        connection.close()


def _read_all(url: str, name: str, expect: int, timeout_s: float = 15.0) -> list[tuple[bytes, int]]:
    """Consume from ``first`` until ``expect`` deliveries (or a quiet spell): (body, x-stream-offset)."""
    connection = pika.BlockingConnection(Ctx(url, "x").params())
    seen: list[tuple[bytes, int]] = []

    def on_message(ch: Any, method: Any, props: Any, body: bytes) -> None:
        seen.append((body, int((props.headers or {})["x-stream-offset"])))
        ch.basic_ack(method.delivery_tag)

    try:
        ch = connection.channel()
        ch.basic_qos(prefetch_count=200)
        ch.basic_consume(name, on_message, arguments={"x-stream-offset": "first"})
        pump(connection, lambda: len(seen) >= expect, timeout_s)
        count = -1
        while count != len(seen):  # whatever else comes, in a short quiet spell
            count = len(seen)
            pump(connection, lambda: False, 0.5)
    finally:
        connection.close()
    return seen


def _read_all_aio(url: str, name: str, expect: int) -> list[tuple[bytes, int]]:
    """The same read with aio-pika: (body, x-stream-offset) from ``first``, ``expect`` of them."""

    async def read() -> list[tuple[bytes, int]]:
        seen: list[tuple[bytes, int]] = []
        connection = await aio_pika.connect(url)
        async with connection:
            channel = await connection.channel()
            await channel.set_qos(prefetch_count=200)
            queue = await channel.declare_queue(name, passive=True)
            async with queue.iterator(arguments={"x-stream-offset": "first"}) as messages:
                async for message in messages:
                    offset = message.headers["x-stream-offset"]
                    assert isinstance(offset, int)
                    seen.append((message.body, offset))
                    await message.ack()
                    if len(seen) >= expect:
                        break
        return seen

    return asyncio.run(asyncio.wait_for(read(), 15))


def _restart_run(side: Side) -> tuple[dict[str, Any], list[int]]:
    """Confirmed publishes, a clean restart, a new publish, a SIGKILL, another publish: what a consumer
    from ``first`` sees at each step, and the declare-ok message_count of a passive declare after each
    restart."""
    name = "stream-restart"
    bodies = [f"m{n}".encode() for n in range(30)]
    _declare(side.url(), name)
    _publish(side.url(), name, bodies)
    seen: dict[str, Any] = {"before": _read_all(side.url(), name, len(bodies))}
    side.restart(False)
    counts = [_passive_count(side.url(), name)]
    seen["after restart"] = _read_all(side.url(), name, len(bodies))
    _publish(side.url(), name, [b"after-restart"])
    seen["after restart, new publish"] = _read_all(side.url(), name, len(bodies) + 1)[-1]
    side.restart(True)
    counts.append(_passive_count(side.url(), name))
    _publish(side.url(), name, [b"after-kill"])
    seen["after kill"] = _read_all(side.url(), name, len(bodies) + 2)
    seen["after kill, aio-pika"] = _read_all_aio(side.url(), name, len(bodies) + 2)
    return seen, counts


def test_stream_survives_restart_and_kill_like_rabbitmq(tmp_path: Path) -> None:
    """Every confirmed message back at its offset after a clean restart and after SIGKILL, and a publish
    after each continues the offsets, as on RabbitMQ.

    The declare-ok message_count of a stream is the one deliberate difference: RabbitMQ 3.10's
    rabbit_stream_queue:stat/1 is ``{ok, 0, 0}`` (the oracle shows 0), 3.13's returns the stream's
    ``messages`` (WarrenMQ follows 3.13)."""
    (expected, oracle_counts), (observed, counts) = _both(tmp_path, _restart_run)
    assert [offset for _, offset in expected["after kill"]] == list(range(32))  # the oracle did it all
    assert expected["after kill, aio-pika"] == expected["after kill"]
    assert observed == expected
    assert oracle_counts == [0, 0]
    assert counts == [30, 31]


# Retention. Both brokers cut whole segments, oldest first, and keep the active one, counting segment-file
# bytes as osiris writes them (broker/core/streams/stream_file_bytes.py), and open every segment after the
# first with a tracking snapshot that takes one offset. With 1000-byte bodies (a 1142-byte chunk each) and
# 5000-byte segments both roll every 5 messages, so the offset of message i is i + i // 5 on both, and
# the segment files (named by their first offsets) are the same.
BODY, SEGMENT, PER_SEGMENT = 1000, 5000, 5
SIZED = {"x-stream-max-segment-size-bytes": SEGMENT}


def _bodies(count: int, start: int = 0) -> list[bytes]:
    return [f"{n:06d}".encode().ljust(BODY, b".") for n in range(start, start + count)]


def _retained(side: Side, name: str, settled: Callable[[list[int]], bool]) -> list[tuple[int, int]]:
    """(message index, x-stream-offset) of what a consumer from ``first`` gets, read again until
    ``settled`` holds of the indexes (osiris deletes segments in its retention process, a moment after
    the roll) or 10 s pass."""
    deadline = time.monotonic() + 10
    while True:
        seen = [(int(body[:6]), offset) for body, offset in _read_all(side.url(), name, 1)]
        if settled([index for index, _ in seen]) or time.monotonic() > deadline:
            return seen
        time.sleep(0.2)


def _size_run(side: Side) -> dict[str, Any]:
    """96 messages: the last one rolls the 20th segment, and nothing is written after it, since osiris
    measures the files in its retention process a moment after the roll (a segment still growing then
    would count larger). With x-max-length-bytes 15000 it keeps the new segment and the newest older ones
    that fit in the rest of the limit: two full ones on both, whatever osiris's per-message overhead
    (WarrenMQ: 1000 + 2 x 5000 <= 15000 < 1000 + 3 x 5000; osiris's segments are a little larger and the
    same two fit), so messages 85..95 remain."""
    name = "stream-size"
    _declare(side.url(), name, **SIZED, **{"x-max-length-bytes": 15000})
    _publish(side.url(), name, _bodies(96))
    seen = _retained(side, name, lambda indexes: bool(indexes) and indexes[0] > 0)
    return {"seen": seen, "count": _passive_count(side.url(), name), "segments": side.segments(name)}


def test_retention_by_size_keeps_the_same_segments_as_rabbitmq(tmp_path: Path) -> None:
    expected, observed = _both(tmp_path, _size_run)
    kept = list(range(85, 96))
    assert expected["seen"] == [(i, i + i // PER_SEGMENT) for i in kept]
    assert (observed["seen"], observed["segments"]) == (expected["seen"], expected["segments"])
    assert expected["segments"] == [(PER_SEGMENT + 1) * n - 1 for n in (17, 18, 19)]  # each after a snapshot
    # declare-ok message_count: 0 from 3.10's stat/1; 3.13 (WarrenMQ) counts the retained log.
    assert (expected["count"], observed["count"]) == (0, len(kept))


def _age_run(side: Side) -> dict[str, Any]:
    """x-max-age 2s: a segment past the age stays until the next roll (osiris evaluates retention when a
    segment rolls over), then goes; the segment holding a fresh message stays."""
    name = "stream-age"
    _declare(side.url(), name, **SIZED, **{"x-max-age": "2s"})
    _publish(side.url(), name, _bodies(8))  # segments [0..4] and [5..7]
    time.sleep(2.5)  # [0..4] gets older than x-max-age on RabbitMQ's wall clock: time must really pass
    _publish(side.url(), name, _bodies(1, 8))  # into [5..8]: no roll, nothing is evaluated
    time.sleep(1)  # a negative check: time in which a broker evaluating at any write would drop [0..4]
    before_roll = _read_all(side.url(), name, 9)
    _publish(side.url(), name, _bodies(2, 9))  # 9 fills [5..9]; 10 rolls: [0..4] is past 2s and goes
    seen = _retained(side, name, lambda indexes: bool(indexes) and indexes[0] > 0)
    before = [int(body[:6]) for body, _ in before_roll]
    return {"before roll": before, "after roll": seen, "segments": side.segments(name)}


@pytest.mark.timeout(180)
def test_retention_by_age_matches_rabbitmq_at_segment_roll(tmp_path: Path) -> None:
    """Real time on both (the oracle has no injectable clock): 2.5 s of sleep per broker."""
    expected, observed = _both(tmp_path, _age_run)
    assert expected["before roll"] == observed["before roll"] == list(range(9))
    assert expected["after roll"] == [(i, i + i // PER_SEGMENT) for i in range(5, 11)]
    assert observed == expected
