"""A queue with consumers, acks, nacks and requeues behaves like a naive model (hypothesis state machine)."""

from __future__ import annotations

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from broker.core.model.dispatcher import Dispatcher
from broker.core.model.message import Message
from broker.core.queues.queue import Consumer, Queue
from broker.core.queues.queue_admin import add_consumer, basic_get, purge_queue, remove_consumer
from broker.core.queues.unacked import Delivery, UnackedTracker, requeue_deliveries
from tests.unit.core.fakes import ManualLoop, RecordingChannel


class QueueMachine(RuleBasedStateMachine):
    """Model: messages are ints in publish order; ready = sorted set of not-outstanding, not-acked ids."""

    def __init__(self) -> None:
        super().__init__()
        self.loop = ManualLoop()
        self.queue = Queue("q", "/", Dispatcher(self.loop.call_soon, batch=3), durable=True)
        self.channel = RecordingChannel()
        self.tracker = UnackedTracker()
        self.consumer: Consumer | None = None
        self.next_id = 0
        self.model_ready: list[int] = []
        self.model_unacked: dict[int, int] = {}  # tag -> id
        self.seen_delivered: set[int] = set()
        self.redelivered_expected: set[int] = set()

    def _pump(self) -> None:
        self.loop.run()
        for consumer, queue, envelope in self.channel.envelopes:
            tag = self.tracker.allocate_tag()
            consumer.unacked -= 1  # the fake counted it; the tracker counts it again
            self.tracker.track(Delivery(tag, queue, envelope, consumer))
            ident = int(envelope.message.body)
            assert envelope.seq == ident + 1, "a copy keeps its publish position, fresh or requeued"
            assert envelope.redelivered == (ident in self.redelivered_expected)
            assert self.model_ready[0] == ident, "deliveries follow the queue's order"
            self.model_ready.pop(0)
            self.model_unacked[tag] = ident
        self.channel.envelopes.clear()

    @rule(count=st.integers(1, 4))
    def publish(self, count: int) -> None:
        for _ in range(count):
            # Bodies of different sizes, every third one persistent: the byte counters must follow.
            body = str(self.next_id).encode() + b" " * (self.next_id % 5)
            self.queue.enqueue(Message("", "q", b"", body, delivery_mode=2 if self.next_id % 3 == 0 else 1))
            self.model_ready.append(self.next_id)
            self.next_id += 1
        self._pump()

    @precondition(lambda self: self.consumer is None)
    @rule(prefetch=st.integers(0, 3))
    def consume(self, prefetch: int) -> None:
        self.consumer = Consumer(
            "c", self.queue, self.channel, no_ack=False, exclusive=False, prefetch_count=prefetch
        )
        add_consumer(self.queue, self.consumer)
        self._pump()

    @precondition(lambda self: self.consumer is not None)
    @rule()
    def cancel(self) -> None:
        assert self.consumer is not None
        remove_consumer(self.queue, self.consumer)
        self.consumer = None

    @precondition(lambda self: bool(self.model_unacked))
    @rule(data=st.data(), multiple=st.booleans(), requeue=st.booleans())
    def settle(self, data: st.DataObject, multiple: bool, requeue: bool) -> None:
        tag = data.draw(st.sampled_from(sorted(self.model_unacked)))
        settled = self.tracker.settle(tag, multiple)
        expected_tags = [t for t in sorted(self.model_unacked) if t <= tag] if multiple else [tag]
        assert [d.delivery_tag for d in settled] == expected_tags
        idents = [self.model_unacked.pop(t) for t in expected_tags]
        if requeue:
            requeue_deliveries(settled)
            self.model_ready = sorted(self.model_ready + idents)
            self.redelivered_expected.update(idents)
        self.queue.wake()
        self._pump()

    @rule()
    def get(self) -> None:
        envelope = basic_get(self.queue)
        if envelope is None:
            assert not self.model_ready
            return
        assert int(envelope.message.body) == envelope.seq - 1 == self.model_ready.pop(0)

    @rule()
    def purge(self) -> None:
        assert purge_queue(self.queue) == len(self.model_ready)
        self.model_ready.clear()

    @invariant()
    def byte_counters_match_the_messages_held(self) -> None:
        # Kept incrementally (broker.core.queues.queue_bytes); recomputed here from what the queue holds.
        def size(ident: int) -> int:
            return len(str(ident)) + ident % 5

        def persistent(idents: list[int]) -> list[int]:
            return [ident for ident in idents if ident % 3 == 0]

        unacked = list(self.model_unacked.values())
        queue = self.queue
        assert queue.ready_bytes == sum(map(size, self.model_ready))
        assert queue.unacked_bytes == sum(map(size, unacked))
        assert queue.persistent_ready == len(persistent(self.model_ready))
        assert queue.persistent_ready_bytes == sum(map(size, persistent(self.model_ready)))
        assert queue.persistent_unacked == len(persistent(unacked))
        assert queue.persistent_unacked_bytes == sum(map(size, persistent(unacked)))

    @invariant()
    def ready_matches_model(self) -> None:
        # The ready list is the envelopes (requeued copies), then the fresh copies held as bare messages.
        queue = self.queue
        held = [int(e.message.body) for e in queue.ready] + [int(m.body) for m in queue.fresh]
        assert held == self.model_ready
        assert queue.message_count == len(self.model_ready)

    @invariant()
    def prefetch_respected(self) -> None:
        if self.consumer is not None and self.consumer.prefetch_count:
            assert self.consumer.unacked <= self.consumer.prefetch_count
        assert self.queue.unacked == len(self.model_unacked)


TestQueueModel = QueueMachine.TestCase
TestQueueModel.settings = settings(max_examples=150, stateful_step_count=40, deadline=None)
