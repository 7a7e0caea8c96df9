"""Differential test of a stream's offsets and segments across rolls, size retention, a clean restart and a
SIGKILL: RabbitMQ 3.10.8 (osiris) against WarrenMQ, compared exactly. Each later segment's tracking snapshot
takes one offset on both; segments roll and retention drops them by segment-file bytes on both, so the
segment files' first offsets, every delivery's x-stream-offset and where each x-stream-offset spec attaches
are the same.

The workload sizes rolls and retention with a margin (over 200 bytes at every roll, 1000 at every retention
decision) wider than what WarrenMQ's count leaves out: RabbitMQ's snapshot grows by 51 bytes per further
publishing channel (writer), and its writer id by a byte when the channel's Erlang pid is a digit longer
(broker/core/streams/stream_file_bytes.py states these bounds). With 200-byte bodies a count of body bytes
would roll every 10 messages instead of 5, so this diff fails on it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pika
import pytest

from .scenarios.kit import Ctx, pump
from .test_stream_durability import Side, _both, _declare, _passive_count, _read_all

pytestmark = [pytest.mark.compat, pytest.mark.slow]

NAME = "stream-offsets"
BODY = 200
# ~440 bytes a message as osiris writes it: 5 messages a 2000-byte segment; 6000 bytes keep the active
# segment and the two newest closed ones.
ARGUMENTS = {"x-stream-max-segment-size-bytes": 2000, "x-max-length-bytes": 6000}
KEPT = 3  # segments once retention has run: the active one and the two newest closed ones
PROPERTIES = pika.BasicProperties(
    delivery_mode=2, content_type="application/json", headers={"k": "v", "n": 7}
)


def _body(index: int) -> bytes:
    return f"{index:06d}".encode().ljust(BODY, b".")


def _publish(url: str, first: int, count: int) -> None:
    """One channel (one osiris writer), a confirm per message: osiris writes each in a chunk of its own."""
    connection = pika.BlockingConnection(Ctx(url, "x").params())
    try:
        channel = connection.channel()
        channel.confirm_delivery()
        for index in range(first, first + count):
            channel.basic_publish("", NAME, _body(index), PROPERTIES, mandatory=True)
    finally:
        connection.close()


def _indexed(side: Side) -> list[tuple[int, int]]:
    """(publish index, x-stream-offset) of every delivery from ``first``."""
    return [(int(body[:6]), offset) for body, offset in _read_all(side.url(), NAME, 1)]


def _settled(side: Side) -> list[int]:
    """The stream's segment firsts once retention has run: no more than KEPT, the same in two reads 0.5 s
    apart (osiris's retention deletes files in its own process, a moment after the roll). After 20 s,
    whatever is there, for the comparison to show."""
    last = side.segments(NAME)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        time.sleep(0.5)
        now = side.segments(NAME)
        if now == last and len(now) <= KEPT:
            return now
        last = now
    return last


def _attach(url: str, spec: Any, publish: Callable[[], None] | None = None) -> tuple[int, int] | None:
    """The first delivery (index, offset) to a consumer attached at ``spec``, None if none comes in time (1 s;
    with ``publish``, run once the consumer has attached, 5 s). A prefetch of 1, no ack, and the connection
    closed: nothing held that pika would nack."""
    connection = pika.BlockingConnection(Ctx(url, "x").params())
    seen: list[tuple[int, int]] = []
    try:
        channel = connection.channel()
        channel.basic_qos(prefetch_count=1)
        channel.basic_consume(
            NAME,
            lambda _c, _m, props, body: seen.append((int(body[:6]), int(props.headers["x-stream-offset"]))),
            arguments={"x-stream-offset": spec},
        )
        if publish is not None:
            pump(connection, lambda: False, 0.3)
            publish()
        pump(connection, lambda: bool(seen), 1.0 if publish is None else 5.0)
    finally:
        connection.close()
    return seen[0] if seen else None


def _next_gets_the_new_message(side: Side, index: int) -> tuple[int, int] | None:
    """A consumer attached at ``next`` receives the message published after it attached."""
    return _attach(side.url(), "next", lambda: _publish(side.url(), index, 1))


def _attachments(side: Side, segments: list[int]) -> dict[str, Any]:
    """Where each x-stream-offset spec starts: every segment's first offset (its snapshot's), the offset
    after it, offset 0 (below the head since retention), first, last, and an offset past the tail."""
    url = side.url()
    specs: list[Any] = ["first", "last", 0, 10**6]
    for first in segments:
        specs += [first, first + 1]
    return {str(spec): _attach(url, spec) for spec in specs}


def _run(side: Side) -> dict[str, Any]:
    _declare(side.url(), NAME, **ARGUMENTS)
    _publish(side.url(), 0, 22)  # rolls at 5, 10, 15, 20; retention drops two segments
    seen: dict[str, Any] = {"segments": _settled(side)}
    seen["deliveries"] = _indexed(side)
    seen["attach"] = _attachments(side, seen["segments"])
    seen["next"] = _next_gets_the_new_message(side, 22)
    side.restart(False)
    _passive_count(side.url(), NAME)
    seen["restart: segments"] = _settled(side)
    seen["restart: deliveries"] = _indexed(side)
    seen["restart: attach"] = _attachments(side, seen["restart: segments"])
    _publish(side.url(), 23, 6)  # rolls at 25 (a new writer: RabbitMQ's snapshot names both)
    seen["restart, publish: segments"] = _settled(side)
    seen["restart, publish: deliveries"] = _indexed(side)
    side.restart(True)
    _passive_count(side.url(), NAME)
    seen["kill: segments"] = _settled(side)
    seen["kill: deliveries"] = _indexed(side)
    seen["kill: next"] = _next_gets_the_new_message(side, 29)
    # That publish filled segment 29. osiris rolls it (and retention drops segment 17) only at the next write
    # or reader attach, not at the write itself as WarrenMQ does: a reader attaches first, then the segments
    # settle, so the deliveries read are the rolled stream's on both (CI once raced the roll: 15-19 on
    # RabbitMQ only).
    seen["kill, publish: reader"] = _attach(side.url(), "last")
    seen["kill, publish: segments"] = _settled(side)
    seen["kill, publish: deliveries"] = _indexed(side)
    seen["kill, publish: attach"] = _attachments(side, seen["kill, publish: segments"])
    return seen


@pytest.mark.timeout(300)
def test_offsets_segments_and_attach_points_match_rabbitmq_across_rolls_retention_and_restarts(
    tmp_path: Path,
) -> None:
    expected, observed = _both(tmp_path, _run)
    # The oracle itself: 5 messages a segment, each later segment's snapshot taking one offset.
    assert expected["segments"] == [11, 17, 23]
    assert expected["deliveries"] == [(i, i + i // 5) for i in range(10, 22)]
    assert observed == expected
