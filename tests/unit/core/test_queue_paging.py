"""Paging a plain queue's bodies to spill files and back (broker.core.queues.queue_paging with
broker.storage.spill's real files): order, bodies and counters survive; the spill's files go when its bodies
have been read."""

from __future__ import annotations

import errno
from pathlib import Path

import pytest

from broker.core.broker import Broker
from broker.core.model.message import Message
from broker.core.queues.queue import Consumer, Queue
from broker.core.queues.queue_admin import add_consumer, basic_get, purge_queue, remove_consumer
from broker.core.queues.queue_features import QueueFeatures
from broker.core.queues.queue_paging import HEAD_BYTES, PagedMessage, PagedQueue, page_out
from broker.core.queues.unacked import Delivery, UnackedTracker, requeue_deliveries
from broker.storage.spill import SpillDirectory, SpillFile
from tests.unit.core.fakes import ManualLoop, RecordingChannel

SIZE = 10_000


def _body(index: int) -> bytes:
    return f"{index:08d}".encode() * (SIZE // 8)


class Setup:
    def __init__(self, tmp_path: Path) -> None:
        self.loop = ManualLoop()
        self.broker = Broker(self.loop.call_soon)
        self.vhost = self.broker.vhosts["/"]
        self.queue: Queue = self.vhost.declare_queue("q", None)
        self.spills = SpillDirectory(str(tmp_path))
        self.published = 0

    def publish(self, count: int, **fields: object) -> None:
        for _ in range(count):
            message = Message("", "q", b"", _body(self.published), **fields)  # type: ignore[arg-type]
            self.queue.enqueue(message)
            self.published += 1

    def files(self) -> list[Path]:
        return sorted(self.spills.path.iterdir())

    def consume_all(self, prefetch: int = 0) -> list[bytes]:
        channel = RecordingChannel()
        consumer = Consumer("c", self.queue, channel, no_ack=True, exclusive=False, prefetch_count=prefetch)
        add_consumer(self.queue, consumer)
        self.loop.drain()
        remove_consumer(self.queue, consumer)
        return [envelope.message.body for _, _, envelope in channel.envelopes]


@pytest.fixture
def setup(tmp_path: Path) -> Setup:
    return Setup(tmp_path)


def test_a_backlog_beyond_the_head_is_paged_out_and_counted(setup: Setup) -> None:
    setup.publish(300)
    queue = setup.queue
    assert page_out(queue, setup.spills.new_spill) == queue.paged > 0
    assert isinstance(queue.features, PagedQueue)
    assert len(queue.ready) == 300
    assert queue.ready_bytes == 300 * SIZE  # the message bytes do not change, only where they are
    assert queue.paged_bytes == queue.paged * SIZE
    assert queue.ready_bytes - queue.paged_bytes <= HEAD_BYTES + SIZE
    # The paged envelopes are the tail, their messages body-less copies.
    envelopes = list(queue.ready)
    in_memory = 300 - queue.paged
    assert not any(isinstance(e.message, PagedMessage) for e in envelopes[:in_memory])
    assert all(isinstance(e.message, PagedMessage) and e.message.body == b"" for e in envelopes[in_memory:])
    assert sum(path.stat().st_size for path in setup.files()) == queue.paged * SIZE


def test_paged_bodies_come_back_in_order_and_the_files_go(setup: Setup) -> None:
    setup.publish(300)
    page_out(setup.queue, setup.spills.new_spill)
    setup.publish(50)  # while paged: straight to the spill
    assert setup.queue.paged >= 50
    assert setup.consume_all() == [_body(index) for index in range(350)]
    queue = setup.queue
    assert (queue.message_count, queue.ready_bytes, queue.paged, queue.paged_bytes) == (0, 0, 0, 0)
    assert queue.features is None  # back on the plain path
    assert setup.files() == []


def test_get_and_requeue_keep_the_order_while_paged(setup: Setup) -> None:
    setup.publish(300)
    page_out(setup.queue, setup.spills.new_spill)
    queue = setup.queue
    tracker = UnackedTracker()
    fetched = []
    for _ in range(3):
        envelope = basic_get(queue)
        assert envelope is not None
        tracker.track(Delivery(tracker.allocate_tag(), queue, envelope, None))
        fetched.append(envelope.message.body)
    assert fetched == [_body(0), _body(1), _body(2)]
    assert queue.unacked_bytes == 3 * SIZE
    requeue_deliveries(tracker.take_all())
    assert queue.unacked_bytes == 0
    assert queue.ready_bytes == 300 * SIZE
    assert setup.consume_all() == [_body(index) for index in range(300)]


def test_a_younger_copy_requeued_behind_paged_older_ones_is_paged_too(setup: Setup) -> None:
    # Copies 0-199 fetched; 0-198 requeued and paged beyond the head; then 199 comes back: its position
    # is behind the paged ones, and the paged envelopes must stay the tail (page_head pages in from there).
    queue = setup.queue
    setup.publish(200)
    tracker = UnackedTracker()
    deliveries = []
    while (envelope := basic_get(queue)) is not None:
        delivery = Delivery(tracker.allocate_tag(), queue, envelope, None)
        tracker.track(delivery)
        deliveries.append(delivery)
    requeue_deliveries(tracker.settle(deliveries[-2].delivery_tag, multiple=True))
    assert page_out(queue, setup.spills.new_spill) > 0
    requeue_deliveries(tracker.settle(deliveries[-1].delivery_tag, multiple=False))
    flags = [isinstance(envelope.message, PagedMessage) for envelope in queue.ready]
    assert flags == sorted(flags)
    assert sum(flags) == queue.paged
    assert [envelope.seq for envelope in queue.ready] == list(range(1, 201))
    assert setup.consume_all() == [_body(index) for index in range(200)]
    assert setup.files() == []


def test_purge_and_delete_drop_the_spill(setup: Setup) -> None:
    setup.publish(300)
    page_out(setup.queue, setup.spills.new_spill)
    assert setup.files()
    assert purge_queue(setup.queue) == 300
    assert (setup.queue.ready_bytes, setup.queue.paged, setup.queue.features) == (0, 0, None)
    assert setup.files() == []
    setup.publish(300)
    page_out(setup.queue, setup.spills.new_spill)
    setup.vhost.delete_queue("q", None)
    assert setup.files() == []


def test_a_message_with_a_ttl_pages_the_queue_back_in_for_the_featured_path(setup: Setup) -> None:
    setup.publish(300)
    page_out(setup.queue, setup.spills.new_spill)
    setup.publish(1, expiration="60000")
    queue = setup.queue
    assert isinstance(queue.features, QueueFeatures)
    assert queue.paged == 0
    assert not any(isinstance(e.message, PagedMessage) for e in queue.ready)
    assert setup.files() == []
    assert setup.consume_all() == [_body(index) for index in range(301)]


def test_a_small_queue_does_not_page(setup: Setup) -> None:
    setup.publish(HEAD_BYTES // SIZE - 1)
    assert page_out(setup.queue, setup.spills.new_spill) == 0
    assert setup.queue.features is None
    assert setup.files() == []


def test_a_consumer_priority_pages_the_queue_back_in_for_the_featured_path(setup: Setup) -> None:
    setup.publish(300)
    page_out(setup.queue, setup.spills.new_spill)
    channel = RecordingChannel()
    consumer = Consumer("p", setup.queue, channel, True, False, 0, arguments={"x-priority": 5})
    add_consumer(setup.queue, consumer)
    assert isinstance(setup.queue.features, QueueFeatures)
    assert setup.files() == []
    setup.loop.drain()
    assert [envelope.message.body for _, _, envelope in channel.envelopes] == [_body(i) for i in range(300)]


def test_persistent_counters_of_a_durable_queue_do_not_move_while_paging(tmp_path: Path) -> None:
    setup = Setup(tmp_path)
    queue = setup.vhost.declare_queue("durable", None, durable=True)
    for index in range(200):
        queue.enqueue(Message("", "durable", b"", _body(index), delivery_mode=2 if index % 2 else 1))
    before = (queue.persistent_ready, queue.persistent_ready_bytes, queue.ready_bytes)
    assert before == (100, 100 * SIZE, 200 * SIZE)
    assert page_out(queue, setup.spills.new_spill) > 0
    assert (queue.persistent_ready, queue.persistent_ready_bytes, queue.ready_bytes) == before
    assert purge_queue(queue) == 200
    assert (queue.persistent_ready, queue.persistent_ready_bytes, queue.ready_bytes) == (0, 0, 0)


class FullDisk:
    """A spill over a real SpillFile whose disk fills up after ``room`` writes (ENOSPC), as a full data
    directory would make os.write fail."""

    def __init__(self, inner: SpillFile, room: int) -> None:
        self.inner = inner
        self.room = room

    def write(self, body: bytes) -> int:
        if self.room == 0:
            raise OSError(errno.ENOSPC, "No space left on device")
        self.room -= 1
        return self.inner.write(body)

    def read(self, token: int, size: int) -> bytes:
        return self.inner.read(token, size)

    def close(self) -> None:
        self.inner.close()


@pytest.mark.parametrize("room", [0, 50, 250])
def test_a_full_disk_sends_the_queue_back_to_memory_without_losing_a_message(setup: Setup, room: int) -> None:
    # room 0 / 50: the page-out itself fails part way; 250: a later publish to the paged queue fails.
    setup.publish(300)
    page_out(setup.queue, lambda: FullDisk(setup.spills.new_spill(), room))
    setup.publish(100)
    queue = setup.queue
    assert queue.features is None
    assert (queue.paged, queue.paged_bytes, queue.ready_bytes) == (0, 0, 400 * SIZE)
    assert not any(isinstance(envelope.message, PagedMessage) for envelope in queue.ready)
    assert setup.files() == []
    assert setup.consume_all() == [_body(index) for index in range(400)]
