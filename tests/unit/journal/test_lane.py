"""The journal's two lanes (broker/journal/_lane.c and lane.PyLane) write the same bytes for the same calls.

The C lane is what the broker runs; the Python one is the readable reference and the fallback without a C
compiler. A hypothesis test drives both with the same random publishes, deliveries, settlements and loop
iterations and compares every handed-over batch byte for byte, the marks left on messages and the state in
flight. The clocks are deterministic counters, so the two must also read the clock at the same moments.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from broker.core.model.dispatcher import Dispatcher
from broker.core.model.message import Message
from broker.core.queues.queue import Envelope, Queue
from broker.core.queues.unacked import Delivery
from broker.journal import lane as lane_module
from broker.journal.recorder import COMPACT, FULL, JournalRecorder
from broker.journal.rows import RowBuffer
from broker.journal.schema import DELIVERIES
from protocol import compiled
from tests.unit.journal.support import NATIVE_DISABLED, Sink, Ticks, native_lanes

# A mypyc-compiled Message (setup.py) can be neither subclassed in Python nor given a mark of the wrong type.
MESSAGE_COMPILED = compiled.is_compiled("broker.core.model.message")


class RawSink:
    """Keeps each batch as (table, packed bytes, string values)."""

    def __init__(self) -> None:
        self.batches: list[tuple[str, bytes, list[Any]]] = []

    def submit(self, table: str, batch: RowBuffer) -> bool:
        size = batch.layout.size
        self.batches.append((table, bytes(batch.data[: batch.rows * size]), list(batch.values)))
        return True


def _dispatcher() -> Dispatcher:
    """A dispatcher whose loop never turns: the lanes record deliveries the tests make by hand."""
    return Dispatcher(lambda callback: None)


@dataclass
class World:
    """One lane's side: its recorder, queues, messages and the deliveries awaiting settlement."""

    recorder: JournalRecorder
    sink: RawSink
    queues: list[Queue]
    callbacks: list[Callable[[], None]] = field(default_factory=list)
    envelopes: list[tuple[Queue, Envelope]] = field(default_factory=list)
    unacked: list[Delivery] = field(default_factory=list)

    @classmethod
    def build(cls, native: bool, mode: str, capture: bool, sample: float, draws: list[float]) -> World:
        sink, callbacks = RawSink(), list[Callable[[], None]]()
        queues = [Queue(f"q{i}", "/" if i % 2 else "vh", _dispatcher()) for i in range(3)]
        numbers = iter(draws * 200)
        recorder = JournalRecorder(
            sink, Ticks(), mode=mode, sample=sample, capture_routing=capture, batch_rows=3,
            rng=lambda: next(numbers), call_soon=callbacks.append, native=native,
        )  # fmt: skip
        return cls(recorder, sink, queues, callbacks)

    def publish(self, fanout: int, mandatory: bool, key: int, size: int) -> None:
        message = Message("ex" if key % 2 else "", f"k{key}", b"", b"x" * size, {"h": key})
        queues = self.queues[:fanout]
        self.recorder.lane.published("/", message, queues, mandatory, 1, "peer")
        self.envelopes.extend((queue, Envelope(len(self.envelopes), message)) for queue in queues)

    def deliver(self, index: int, no_ack: bool) -> None:
        if not self.envelopes:
            return
        queue, envelope = self.envelopes[index % len(self.envelopes)]
        tag = len(self.unacked) + 1
        if envelope.message.journal is not None:
            self.recorder.lane.delivered(queue, envelope, tag, no_ack)
        if not no_ack:
            self.unacked.append(Delivery(tag, queue, envelope, None))

    def settle(self, picks: list[int], requeue: bool | None, closed: bool) -> None:
        chosen = sorted({pick % len(self.unacked) for pick in picks}) if self.unacked else []
        deliveries = [self.unacked[i] for i in chosen]
        self.unacked = [d for i, d in enumerate(self.unacked) if i not in chosen]
        self.recorder.lane.settled(deliveries, requeue, closed)
        if closed or requeue:
            for delivery in deliveries:
                delivery.envelope.redelivered = True

    def next_iteration(self) -> None:
        callbacks, self.callbacks[:] = list(self.callbacks), []
        for callback in callbacks:
            callback()

    def state(self) -> tuple[Any, ...]:
        self.recorder.flush()
        marks = [(envelope.message.journal, envelope.message.message_id) for _, envelope in self.envelopes]
        inflight = sorted(self.recorder.inflight.values())
        return self.sink.batches, marks, inflight, self.recorder.lane.now


publish = st.tuples(
    st.just("publish"), st.integers(0, 3), st.booleans(), st.integers(0, 5), st.integers(0, 9)
)
deliver = st.tuples(st.just("deliver"), st.integers(0, 50), st.booleans())
settle = st.tuples(
    st.just("settle"), st.lists(st.integers(0, 20), max_size=3), st.sampled_from([None, True, False]),
    st.booleans(),
)  # fmt: skip
tick = st.tuples(st.just("tick"))


@pytest.mark.skipif(NATIVE_DISABLED, reason="WARRENMQ_JOURNAL_NATIVE=0")
@settings(max_examples=150, deadline=None)
@given(
    ops=st.lists(st.one_of(publish, deliver, deliver, settle, tick), max_size=60),
    mode=st.sampled_from([COMPACT, COMPACT, FULL]),
    capture=st.booleans(),
    sample=st.sampled_from([1.0, 0.5]),
    draws=st.lists(st.floats(0, 0.999), min_size=1, max_size=5),
)
def test_the_native_lane_writes_the_bytes_the_python_lane_writes(
    ops: list[tuple[Any, ...]], mode: str, capture: bool, sample: float, draws: list[float]
) -> None:
    worlds = [World.build(native, mode, capture, sample, draws) for native in (False, True)]
    for op in ops:
        for world in worlds:
            match op:
                case ("publish", fanout, mandatory, key, size):
                    world.publish(fanout, mandatory, key, size)
                case ("deliver", index, no_ack):
                    world.deliver(index, no_ack)
                case ("settle", picks, requeue, closed):
                    world.settle(picks, requeue, closed)
                case _:
                    world.next_iteration()
    python, native = (world.state() for world in worlds)
    assert native == python


@pytest.mark.skipif(NATIVE_DISABLED, reason="WARRENMQ_JOURNAL_NATIVE=0")
def test_the_native_lane_is_built_and_the_recorder_uses_it_by_default() -> None:
    # Fails when setup.py could not build _lane.c (the install only warns): the journal would then cost
    # about three times as much per delivery without anyone noticing.
    assert lane_module.NATIVE_LANE is not None
    recorder = JournalRecorder(RawSink())
    assert type(recorder.lane).__name__ == "NativeLane"


def test_without_the_extension_the_python_lane_serves() -> None:
    code = (
        "from broker.journal.recorder import JournalRecorder\n"
        "from broker.journal.lane import NATIVE_LANE, PyLane\n"
        "class Sink:\n    def submit(self, table, batch): return True\n"
        "assert NATIVE_LANE is None and type(JournalRecorder(Sink()).lane) is PyLane\n"
    )
    env = {**os.environ, "WARRENMQ_JOURNAL_NATIVE": "0"}
    subprocess.run([sys.executable, "-c", code], env=env, check=True, timeout=60)


@native_lanes
def test_a_subclassed_message_takes_the_generic_attribute_path(native: bool) -> None:
    class Traced(Message):
        __slots__ = ()

    sink = Sink()
    recorder = JournalRecorder(sink, Ticks(), native=native)
    queue = Queue("q", "/", _dispatcher())
    message = Traced("", "q", b"", b"body")
    recorder.lane.published("/", message, [queue], False, 1, "peer")
    recorder.lane.delivered(queue, Envelope(0, message), 1, True)
    recorder.flush()
    assert message.journal is not None
    assert message.message_id == 1
    [row] = sink.rows[DELIVERIES]
    assert (row["outcome"], row["queue"], row["exchange"], row["routing_key"]) == ("ack", "q", "", "q")
    assert (row["fanout"], row["body_size"], row["msg_seq"]) == (1, 4, 1)


@pytest.mark.skipif(MESSAGE_COMPILED, reason="a compiled Message refuses the broken mark when it is set")
@native_lanes
def test_a_broken_mark_is_a_type_error_not_a_crash(native: bool) -> None:
    recorder = JournalRecorder(RawSink(), Ticks(), native=native)
    queue = Queue("q", "/", _dispatcher())
    message = Message("", "q", b"", b"body")
    message.journal = (1,)  # type: ignore[assignment]
    with pytest.raises((TypeError, IndexError, ValueError)):
        recorder.lane.delivered(queue, Envelope(0, message), 1, True)


def test_the_native_lane_refuses_a_buffer_that_is_not_a_row_buffer() -> None:
    if lane_module.NATIVE_LANE is None:
        pytest.skip("the native lane is not built")
    recorder = JournalRecorder(RawSink(), Ticks(), native=True)
    with pytest.raises((TypeError, AttributeError)):
        recorder.lane.deliveries = object()  # type: ignore[assignment]
