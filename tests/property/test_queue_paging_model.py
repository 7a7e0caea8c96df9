"""A queue that pages its bodies to spill files (broker.core.queues.queue_paging, real SpillFiles) behaves
like the naive model of test_queue_model: same order, same bodies, byte counters true, the paged envelopes
always a suffix of the ready list. The head budget is shrunk so that a few small messages page."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from broker.core.model.dispatcher import Dispatcher
from broker.core.model.message import Message
from broker.core.queues import queue_paging
from broker.core.queues.queue import Consumer, Queue
from broker.core.queues.queue_admin import add_consumer, basic_get, purge_queue, remove_consumer
from broker.core.queues.queue_paging import PagedMessage, PagedQueue, page_out
from broker.core.queues.unacked import Delivery, UnackedTracker, requeue_deliveries
from broker.storage.spill import SpillDirectory
from tests.unit.core.fakes import ManualLoop, RecordingChannel

PAGED: list[int] = []  # bodies paged out by `page`, over all runs


def _body(ident: int) -> bytes:
    return str(ident).encode() + b" " * (ident % 7)


class PagingMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.directory = tempfile.TemporaryDirectory()
        self.spills = SpillDirectory(self.directory.name)
        self.loop = ManualLoop()
        self.queue = Queue("q", "/", Dispatcher(self.loop.call_soon, batch=3))
        self.channel = RecordingChannel()
        self.tracker = UnackedTracker()
        self.consumer: Consumer | None = None
        self.next_id = 0
        self.model_ready: list[int] = []
        self.model_unacked: dict[int, int] = {}

    def teardown(self) -> None:
        self.directory.cleanup()

    def _pump(self) -> None:
        self.loop.run()
        for consumer, queue, envelope in self.channel.envelopes:
            tag = self.tracker.allocate_tag()
            consumer.unacked -= 1
            self.tracker.track(Delivery(tag, queue, envelope, consumer))
            ident = int(envelope.message.body)
            assert envelope.message.body == _body(ident)
            assert envelope.seq == ident + 1, "a copy keeps its publish position, fresh or paged"
            assert self.model_ready.pop(0) == ident, "deliveries follow the queue's order"
            self.model_unacked[tag] = ident
        self.channel.envelopes.clear()

    @rule(count=st.integers(1, 6))
    def publish(self, count: int) -> None:
        for _ in range(count):
            self.queue.enqueue(Message("", "q", b"", _body(self.next_id)))
            self.model_ready.append(self.next_id)
            self.next_id += 1
        self._pump()

    @rule()
    def page(self) -> None:
        PAGED.append(page_out(self.queue, self.spills.new_spill))

    @precondition(lambda self: self.consumer is None)
    @rule(prefetch=st.integers(1, 3))
    def consume(self, prefetch: int) -> None:
        self.consumer = Consumer("c", self.queue, self.channel, False, False, prefetch)
        add_consumer(self.queue, self.consumer)
        self._pump()

    @precondition(lambda self: self.consumer is not None)
    @rule()
    def cancel(self) -> None:
        assert self.consumer is not None
        remove_consumer(self.queue, self.consumer)
        self.consumer = None

    @precondition(lambda self: bool(self.model_unacked))
    @rule(data=st.data(), requeue=st.booleans())
    def settle(self, data: st.DataObject, requeue: bool) -> None:
        tag = data.draw(st.sampled_from(sorted(self.model_unacked)))
        settled = self.tracker.settle(tag, False)
        ident = self.model_unacked.pop(tag)
        if requeue:
            requeue_deliveries(settled)
            self.model_ready = sorted([*self.model_ready, ident])
        self.queue.wake()
        self._pump()

    @rule()
    def get(self) -> None:
        envelope = basic_get(self.queue)
        if envelope is None:
            assert not self.model_ready
            return
        assert envelope.message.body == _body(self.model_ready.pop(0))

    @rule()
    def purge(self) -> None:
        assert purge_queue(self.queue) == len(self.model_ready)
        self.model_ready.clear()

    @invariant()
    def ready_and_bytes_match_the_model(self) -> None:
        queue = self.queue
        fresh = [int(message.body) for message in queue.fresh]  # plain path: copies not yet in an envelope
        assert [envelope.seq - 1 for envelope in queue.ready] + fresh == self.model_ready
        assert not fresh or queue.features is None, "a paged queue holds every copy in an envelope"
        assert queue.ready_bytes == sum(len(_body(ident)) for ident in self.model_ready)
        assert queue.unacked_bytes == sum(len(_body(ident)) for ident in self.model_unacked.values())

    @invariant()
    def paged_envelopes_are_a_counted_suffix(self) -> None:
        queue = self.queue
        flags = [isinstance(envelope.message, PagedMessage) for envelope in queue.ready]
        assert sum(flags) == queue.paged
        assert flags == sorted(flags), "paged envelopes form the tail"
        paged_bytes = sum(
            envelope.message.spill_size
            for envelope in queue.ready
            if isinstance(envelope.message, PagedMessage)
        )
        assert paged_bytes == queue.paged_bytes
        assert (queue.paged > 0) <= isinstance(queue.features, PagedQueue)

    @invariant()
    def no_spill_file_outlives_its_bodies(self) -> None:
        if not isinstance(self.queue.features, PagedQueue):
            assert list(Path(self.directory.name, "spill").iterdir()) == []


def test_paging_queue_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(queue_paging, "HEAD_BYTES", 8)
    monkeypatch.setattr(queue_paging, "HEAD_MESSAGES", 2)
    PAGED.clear()
    run_state_machine_as_test(
        PagingMachine, settings=settings(max_examples=150, stateful_step_count=40, deadline=None)
    )
    assert sum(PAGED) > 0, "the runs paged something"
