"""Paging a plain queue's message bodies to disk under memory pressure, and back as they near the head.

RabbitMQ's classic queues move message bodies out of memory when the node's memory use passes
``vm_memory_high_watermark_paging_ratio`` of the watermark, so a backlog can outgrow RAM while publishers keep
going. Here the server ring (broker.server.paging) asks a queue to page when memory is that high; the queue
then takes this slow path (`PagedQueue`, installed as its ``features``, so a queue that never pages pays
nothing): its ready list keeps every envelope, in order, but the bodies of all but a head of about
`HEAD_BYTES` are in a spill (`Spill`, files of the storage ring), their messages replaced by `PagedMessage`
copies without a body. The paged envelopes are always a suffix of the ready list: new messages join it, and
the head is paged back in before a delivery or a basic.get reaches it. Requeued messages go back at their
publish positions: before the paged suffix, or paged themselves when an older copy requeued earlier was paged
since and they land behind it.

What is bounded here: only plain classic queues page (no TTL, length limit, priorities, single active
consumer or policy); a per-message TTL, a consumer priority or a policy arriving at a paged queue pages it
back in first (`leave`). Spills are a cache: on restart durable messages come from the store, as before.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Iterable
from itertools import islice
from typing import Protocol

from broker.core.model.envelope import seq_of
from broker.core.model.message import FIELDS as MESSAGE_FIELDS
from broker.core.model.message import Message
from broker.core.queues.queue import Consumer, Envelope, Queue
from broker.core.queues.queue_bytes import added, added_all, removed
from broker.core.queues.queue_settings import PLAIN, QueueSettings

# The head kept in memory: up to this many body bytes, and at least HEAD_MESSAGES messages (a dispatch batch
# pages in what it delivers, whatever their size).
HEAD_BYTES = 1 << 20
HEAD_MESSAGES = 64


class Spill(Protocol):
    """Where one queue's paged bodies live (broker.storage.spill). Tokens are opaque to the queue."""

    def write(self, body: bytes) -> int:
        """Store ``body``; the token to read it back with."""

    def read(self, token: int, size: int) -> bytes:
        """The body stored under ``token`` (then released: each body is read once)."""

    def close(self) -> None:
        """Every body is dropped (purge, delete, the queue left paging)."""


class PagedMessage(Message):
    """A message whose body is in the spill: every field but ``body`` (empty) is the original's."""

    __slots__ = ("spill_size", "spill_token")
    spill_size: int
    spill_token: int


def _page_out(message: Message, spill: Spill) -> PagedMessage:
    paged = PagedMessage.__new__(PagedMessage)  # not object.__new__: Message may be a mypyc class
    for name in MESSAGE_FIELDS:
        setattr(paged, name, getattr(message, name))
    paged.spill_token = spill.write(message.body)
    paged.spill_size = len(message.body)
    paged.body = b""
    return paged


def _page_in(paged: PagedMessage, spill: Spill) -> Message:
    message = Message.__new__(Message)
    for name in MESSAGE_FIELDS:
        setattr(message, name, getattr(paged, name))
    message.body = spill.read(paged.spill_token, paged.spill_size)
    return message


def page_out(queue: Queue, new_spill: Callable[[], Spill]) -> int:
    """Page ``queue`` out beyond its head (a plain classic queue not paged yet); the bodies paged. Called by
    the server ring when memory is high."""
    if queue.features is not None or queue.deleted or queue.ready_bytes <= HEAD_BYTES:
        return 0
    queue.ready_envelopes()  # a paged queue keeps every copy in an envelope (``ready``)
    paged_queue = PagedQueue(queue, new_spill())
    queue.features = paged_queue
    return paged_queue.page_tail()


class PagedQueue:
    """The FeaturedPath of a queue whose tail is paged (see the module docstring)."""

    __slots__ = ("queue", "spill")

    def __init__(self, queue: Queue, spill: Spill) -> None:
        self.queue = queue
        self.spill = spill

    @property
    def settings(self) -> QueueSettings:
        return PLAIN

    @property
    def message_count(self) -> int:
        return len(self.queue.ready)

    # -- paging

    def page_tail(self) -> int:
        """Page out from the tail back until the in-memory head holds about HEAD_BYTES."""
        queue, spill = self.queue, self.spill
        tail: list[Envelope] = []
        in_memory = queue.ready_bytes - queue.paged_bytes
        for envelope in reversed(queue.ready):
            message = envelope.message
            if isinstance(message, PagedMessage):
                break
            size = len(message.body)
            if in_memory - size < HEAD_BYTES:
                break
            in_memory -= size
            tail.append(envelope)
        try:
            for envelope in reversed(tail):  # written in queue order: paging in reads the file forwards
                self._out(envelope, spill)
        except OSError:  # the spill could not take it (disk full: the disk alarm follows): stay in memory
            self.leave()
            return 0
        return len(tail)

    def _out(self, envelope: Envelope, spill: Spill) -> None:
        queue = self.queue
        size = len(envelope.message.body)
        envelope.message = _page_out(envelope.message, spill)
        queue.stats.disk_writes += 1  # a message paged out is a disk write (rabbit_variable_queue's)
        queue.paged += 1
        queue.paged_bytes += size

    def page_head(self, wanted: int) -> None:
        """Bring the head back: at least ``wanted`` messages in memory, and the head budget's worth."""
        queue = self.queue
        ready = queue.ready
        start = len(ready) - queue.paged
        if not queue.paged or (
            start >= wanted
            and (start >= HEAD_MESSAGES or queue.ready_bytes - queue.paged_bytes >= HEAD_BYTES)
        ):
            return
        spill = self.spill
        for envelope in islice(ready, start, None):
            message = envelope.message
            assert isinstance(message, PagedMessage)
            envelope.message = _page_in(message, spill)
            queue.stats.disk_reads += 1  # and one paged back in a disk read
            queue.paged -= 1
            queue.paged_bytes -= message.spill_size
            start += 1
            in_memory = queue.ready_bytes - queue.paged_bytes
            if start >= wanted and (start >= HEAD_MESSAGES or in_memory >= HEAD_BYTES):
                break

    def leave(self) -> None:
        """Page everything back in and return the queue to the plain path (or to QueueFeatures next). Walks
        the whole ready list, so it also mends a suffix a failed spill write left with a hole."""
        queue, spill = self.queue, self.spill
        for envelope in queue.ready:
            message = envelope.message
            if isinstance(message, PagedMessage):
                envelope.message = _page_in(message, spill)
                queue.stats.disk_reads += 1
                queue.paged -= 1
                queue.paged_bytes -= message.spill_size
        self._close()

    def _close(self) -> None:
        self.spill.close()
        if self.queue.features is self:
            self.queue.features = None

    def _done_paging(self) -> None:
        if not self.queue.paged:
            self._close()

    # -- FeaturedPath

    def apply_settings(self, settings: QueueSettings) -> None:
        """Only plain queues page: settings that give the queue features bring the bodies back first
        (policy_apply calls `leave`), and plain settings leave nothing to apply here."""

    def enqueue(self, message: Message) -> bool:
        queue = self.queue
        if message.ttl is not None:
            # TTL needs QueueFeatures' expiry, which does not page.
            self.leave()
            features = queue.use_features()
            assert features is not None
            return features.enqueue(message)
        queue.last_seq += 1
        envelope = Envelope(queue.last_seq, message)
        if queue.store is not None and message.delivery_mode == 2:
            queue.store.message_added(queue, envelope)  # the store writes the body before it is paged
        queue.ready.append(envelope)
        added(queue, envelope)
        if queue.paged or queue.ready_bytes - queue.paged_bytes > HEAD_BYTES:
            try:
                self._out(envelope, self.spill)
            except OSError:  # the spill could not take it (disk full): the queue goes back to memory
                self.leave()
        if queue.consumers:
            queue.dispatcher.wake(queue)
        return True

    def requeue(self, envelopes: Iterable[Envelope]) -> None:
        queue = self.queue
        ready = queue.ready
        for envelope in sorted(envelopes, key=seq_of, reverse=True):
            envelope.redelivered = True
            added(queue, envelope)
            if not ready or envelope.seq < ready[0].seq:
                ready.appendleft(envelope)
                continue
            position = bisect_left(ready, envelope.seq, key=seq_of)
            ready.insert(position, envelope)
            if position > len(ready) - 1 - queue.paged:
                # Behind a paged envelope (an older copy requeued earlier and paged since): paged too, so the
                # paged envelopes stay a suffix for page_head.
                try:
                    self._out(envelope, self.spill)
                except OSError:
                    self.leave()
        queue.wake()

    def get(self) -> Envelope | None:
        queue = self.queue
        if not queue.ready:
            return None
        self.page_head(1)
        envelope = queue.ready.popleft()
        removed(queue, envelope)
        self._done_paging()
        return envelope

    def recover(self, envelopes: list[Envelope]) -> None:
        self.queue.ready.extend(envelopes)
        added_all(self.queue, envelopes)

    def purged(self) -> None:
        self._close()

    def consumer_added(self, consumer: Consumer) -> None:
        if consumer.arguments and "x-priority" in consumer.arguments:
            self.leave()
            features = self.queue.use_features()
            if features is not None:
                features.consumer_added(consumer)

    def consumer_removed(self) -> None:
        return None

    def dispatch(self, budget: int) -> bool:
        """Round-robin as the plain path, over a head paged in for this batch."""
        queue = self.queue
        ready, consumers = queue.ready, queue.consumers
        self.page_head(min(budget, len(ready)))
        delivered = 0
        blocked = False
        while ready and delivered < budget and len(ready) > queue.paged:
            for _ in range(len(consumers)):
                consumer = consumers[0]
                consumers.rotate(-1)
                if consumer.channel.can_deliver(consumer):
                    break
            else:
                blocked = True
                break
            envelope = ready.popleft()
            removed(queue, envelope)
            consumer.channel.deliver(consumer, queue, envelope)
            delivered += 1
        self._done_paging()
        return not blocked and bool(ready) and delivered >= budget

    def touch(self) -> None:
        return None

    def close(self) -> None:
        self.spill.close()
