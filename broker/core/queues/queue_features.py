"""The slow path of a queue that uses features: message TTL, queue expiry, length limits, priorities,
single active consumer, consumer priorities and the quorum delivery limit.

A `Queue` with ``features is None`` never enters this module (hot-path rule 7: a feature costs one attribute
check when unused). Behaviour follows rabbit_amqqueue_process (classic queues, RabbitMQ 3.10-3.13): expiry
only at the head, ``Now >= Expiry`` expires, an empty queue with a free consumer delivers at once (so TTL 0
means "deliver now or expire"), drop-head trims after enqueue, reject-publish refuses when ``len + 1 > max``
or ``bytes + size > max_bytes`` (ready messages only).
"""

from __future__ import annotations

from bisect import bisect_left
from collections import deque
from collections.abc import Iterable
from typing import TYPE_CHECKING, cast

from broker.core.model.envelope import seq_of
from broker.core.queues.priority_ready import PriorityReady
from broker.core.queues.queue import Consumer, Envelope, Queue, QueueHost
from broker.core.queues.queue_bytes import added, removed
from broker.core.queues.queue_settings import DROP_HEAD, QUORUM, REJECT_PUBLISH_DLX, QueueSettings

if TYPE_CHECKING:
    from broker.core.model.clock import TimerHandle
    from broker.core.model.message import Message

EXPIRED, MAXLEN, REJECTED, DELIVERY_LIMIT = "expired", "maxlen", "rejected", "delivery_limit"


class TimedEnvelope(Envelope):
    """An envelope in a featured queue: its expiry deadline (epoch ms, None = never), its return count
    (a quorum queue's x-delivery-count) and, of those returns, the failed deliveries an AMQP 1.0 receiver
    reported (modified with delivery-failed: the 1.0 header's delivery-count, as rabbit_fifo counts them)."""

    __slots__ = ("delivery_count", "delivery_failures", "expires_at")

    def __init__(self, seq: int, message: Message, expires_at: int | None, redelivered: bool = False) -> None:
        super().__init__(seq, message, redelivered)
        self.expires_at = expires_at
        self.delivery_count = 0
        self.delivery_failures = 0


def _timed(envelope: Envelope) -> TimedEnvelope:
    if isinstance(envelope, TimedEnvelope):
        return envelope
    return TimedEnvelope(envelope.seq, envelope.message, None, envelope.redelivered)


def consumer_priority(consumer: Consumer) -> int:
    value = consumer.arguments.get("x-priority", 0)
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


class QueueFeatures:
    """Feature state of one queue; every method takes over the matching `Queue` method."""

    __slots__ = (
        "_awaiting_commit",
        "_expiry_due",
        "_expiry_timer",
        "_last_used",
        "_unused_timer",
        "consumer_priorities",
        "host",
        "queue",
        "settings",
    )

    @property
    def message_count(self) -> int:
        return len(self.queue.ready)

    def __init__(self, queue: Queue, settings: QueueSettings, host: QueueHost) -> None:
        self.queue = queue
        self.settings = settings
        self.host = host
        self.consumer_priorities = False
        self._expiry_timer: TimerHandle | None = None
        self._expiry_due: int | None = None
        self._unused_timer: TimerHandle | None = None
        self._last_used = host.clock.monotonic_s()
        # Quorum returns whose delivery counts are not committed yet: dispatch waits for them (see requeue).
        self._awaiting_commit = 0
        ready = queue.ready_envelopes()  # a featured queue keeps every copy in an envelope (``ready``)
        if settings.max_priority:
            prioritised = PriorityReady(settings.max_priority)
            for envelope in ready:
                prioritised.append(_timed(envelope))
            queue.ready = cast("deque[Envelope]", prioritised)
        else:
            queue.ready = deque(_timed(envelope) for envelope in ready)
        if settings.expires is not None:
            self.touch()

    def apply_settings(self, settings: QueueSettings) -> None:
        """A policy changed what applies (rabbit_amqqueue_process:process_args_policy): a lower limit
        drops the head at once, a new x-expires period starts now; queued messages keep their expiry, as a
        message TTL is fixed at publish (both checked against RabbitMQ 3.10.8)."""
        old, self.settings = self.settings, settings
        if settings.expires != old.expires:
            if self._unused_timer is not None:
                self._unused_timer.cancel()
                self._unused_timer = None
            self.touch()
        if settings.limited:
            self._drop_head_over_limit()
        self.queue.wake()

    # -- publishing

    def enqueue(self, message: Message) -> bool:
        """False when an x-overflow reject-publish(-dlx) limit refused it (the publisher gets a nack)."""
        queue, settings = self.queue, self.settings
        size = len(message.body)
        if settings.overflow != DROP_HEAD and self._would_overflow(size):
            if settings.overflow == REJECT_PUBLISH_DLX:
                self.host.dead_letter(queue, [TimedEnvelope(0, message, None)], MAXLEN)
            return False
        ttl = settings.message_ttl
        if message.ttl is not None and (ttl is None or message.ttl < ttl):
            ttl = message.ttl
        queue.last_seq += 1
        expires_at = None if ttl is None else self.host.clock.now_ms() + ttl
        envelope = TimedEnvelope(queue.last_seq, message, expires_at)
        if queue.store is not None and message.delivery_mode == 2:
            queue.store.message_added(queue, envelope)
        ready = queue.ready
        if not ready and queue.consumers and not queue.deleted:
            consumer = self.pick_consumer()
            if consumer is not None:
                consumer.channel.deliver(consumer, queue, envelope)
                return True
        if ttl == 0 and settings.message_ttl == 0 and settings.dead_letter_exchange is None:
            # rabbit_amqqueue_process:deliver_or_enqueue discards an undelivered message of a queue with TTL 0
            # and no DLX even behind a head that does not expire (a policy set after it; 3.10.8-checked).
            self.host.dead_letter(queue, [envelope], EXPIRED)
            return True
        ready.append(envelope)
        added(queue, envelope)
        if settings.max_length is not None or settings.max_length_bytes is not None:
            self._drop_head_over_limit()
        if expires_at is not None:
            self._drop_expired()
            self._arm_expiry()
        if ready and queue.consumers:
            queue.dispatcher.wake(queue)
        return True

    def _would_overflow(self, size: int) -> bool:
        settings = self.settings
        return (settings.max_length is not None and len(self.queue.ready) + 1 > settings.max_length) or (
            settings.max_length_bytes is not None
            and self.queue.ready_bytes + size > settings.max_length_bytes
        )

    def _drop_head_over_limit(self) -> None:
        settings, ready = self.settings, self.queue.ready
        max_length, max_bytes = settings.max_length, settings.max_length_bytes
        dropped: list[Envelope] = []
        while ready and (
            (max_length is not None and len(ready) > max_length)
            or (max_bytes is not None and self.queue.ready_bytes > max_bytes)
        ):
            dropped.append(self._pop())
        if dropped:
            self.host.dead_letter(self.queue, dropped, MAXLEN)

    def _pop(self) -> Envelope:
        envelope = self.queue.ready.popleft()
        removed(self.queue, envelope)
        return envelope

    # -- expiry

    def _drop_expired(self) -> None:
        ready = self.queue.ready
        if not ready:
            return
        now = self.host.clock.now_ms()
        expired: list[Envelope] = []
        while ready:
            expires_at = cast("TimedEnvelope", ready[0]).expires_at
            if expires_at is None or expires_at > now:
                break
            expired.append(self._pop())
        if expired:
            self.host.dead_letter(self.queue, expired, EXPIRED)

    def _arm_expiry(self) -> None:
        """Keep one timer for the head's deadline (RabbitMQ's ensure_ttl_timer)."""
        ready = self.queue.ready
        if not ready or self.queue.deleted:
            return
        due = cast("TimedEnvelope", ready[0]).expires_at
        if due is None or (self._expiry_due is not None and self._expiry_due <= due):
            return
        if self._expiry_timer is not None:
            self._expiry_timer.cancel()
        clock = self.host.clock
        self._expiry_due = due
        self._expiry_timer = clock.call_later((due - clock.now_ms()) / 1000, self._on_expiry_timer)

    def _on_expiry_timer(self) -> None:
        self._expiry_timer = None
        self._expiry_due = None
        if self.queue.deleted:
            return
        self._drop_expired()
        self._arm_expiry()

    # -- x-expires

    def touch(self) -> None:
        """The queue was used (declared, basic.get, its last consumer left): restart the x-expires period."""
        expires = self.settings.expires
        if expires is None:
            return
        clock = self.host.clock
        self._last_used = clock.monotonic_s()
        if self._unused_timer is None and not self.queue.consumers:
            self._unused_timer = clock.call_later(expires / 1000, self._on_unused_timer)

    def _on_unused_timer(self) -> None:
        self._unused_timer = None
        queue, expires = self.queue, self.settings.expires
        if queue.deleted or queue.consumers or expires is None:
            return
        idle_ms = (self.host.clock.monotonic_s() - self._last_used) * 1000
        if idle_ms >= expires - 0.5:
            self.host.expire_queue(queue)
        else:
            self._unused_timer = self.host.clock.call_later((expires - idle_ms) / 1000, self._on_unused_timer)

    # -- consuming

    def consumer_added(self, consumer: Consumer) -> None:
        if "x-priority" in consumer.arguments:
            self.consumer_priorities = True

    def consumer_removed(self) -> None:
        if not self.queue.consumers:
            self.touch()

    def pick_consumer(self) -> Consumer | None:
        """The consumer for the next message: the single active one; else the highest-priority consumer that
        can take it, round-robin among equals (consumer-priority.md); None when all are blocked."""
        consumers = self.queue.consumers
        if not consumers:
            return None
        if self.settings.single_active_consumer:
            active = consumers[0]
            return active if active.channel.can_deliver(active) else None
        if not self.consumer_priorities:
            for _ in range(len(consumers)):
                consumer = consumers[0]
                consumers.rotate(-1)
                if consumer.channel.can_deliver(consumer):
                    return consumer
            return None
        best: Consumer | None = None
        best_priority = 0
        for consumer in consumers:
            priority = consumer_priority(consumer)
            if (best is None or priority > best_priority) and consumer.channel.can_deliver(consumer):
                best, best_priority = consumer, priority
        if best is not None:
            consumers.remove(best)
            consumers.append(best)
        return best

    def dispatch(self, budget: int) -> bool:
        if self._awaiting_commit:
            return False  # a returned message's count first (requeue): the commit wakes the queue
        queue = self.queue
        ready = queue.ready
        delivered = 0
        blocked = False
        while ready and delivered < budget:
            if cast("TimedEnvelope", ready[0]).expires_at is not None:
                self._drop_expired()
                if not ready:
                    break
            consumer = self.pick_consumer()
            if consumer is None:
                blocked = True
                break
            consumer.channel.deliver(consumer, queue, self._pop())
            delivered += 1
        self._arm_expiry()
        return not blocked and bool(ready) and delivered >= budget

    def get(self) -> Envelope | None:
        self.touch()
        self._drop_expired()
        if not self.queue.ready:
            return None
        envelope = self._pop()
        # rabbit_amqqueue_process:fetch drops the expired messages the fetch exposed at the head, so
        # get-ok's message_count leaves them out (checked against RabbitMQ 3.10.8)
        self._drop_expired()
        self._arm_expiry()
        return envelope

    def purged(self) -> None:
        """The ready list was emptied (its counters were cleared with it)."""

    def recover(self, envelopes: list[Envelope]) -> None:
        """Stored messages back in place (their expiry deadlines kept); the expired ones leave at once."""
        ready = self.queue.ready
        for envelope in envelopes:
            ready.append(_timed(envelope))
            added(self.queue, envelope)
        self._drop_expired()
        self._arm_expiry()

    # -- returns

    def requeue(self, envelopes: Iterable[Envelope]) -> None:
        """Back to their publish positions (keeping their expiry deadline, as RabbitMQ does); a quorum queue
        counts the return and dead-letters a message returned more often than its delivery limit."""
        queue, settings = self.queue, self.settings
        ready = queue.ready
        over_limit: list[Envelope] = []
        counted: list[Envelope] = []
        quorum = settings.queue_type == QUORUM
        limit = settings.delivery_limit
        # ``queue.ready`` is typed as the deque it usually is, but a priority queue keeps a PriorityReady
        # there (see __init__): test the object, not the declared type, which mypyc compiles to "never".
        held: object = ready
        prioritised = held if isinstance(held, PriorityReady) else None
        for envelope in sorted((_timed(e) for e in envelopes), key=seq_of, reverse=True):
            envelope.redelivered = True
            if quorum:
                envelope.delivery_count += 1
                if limit is not None and envelope.delivery_count > limit:
                    over_limit.append(envelope)
                    continue
                envelope.message = self.host.with_delivery_count(envelope.message, envelope.delivery_count)
                counted.append(envelope)
            added(queue, envelope)
            if prioritised is not None:
                prioritised.insert_in_order(envelope)
            elif not ready or envelope.seq < ready[0].seq:
                ready.appendleft(envelope)
            else:
                ready.insert(bisect_left(ready, envelope.seq, key=seq_of), envelope)
        if counted and queue.store is not None:
            # rabbit_fifo commits a return to its log before the message can go out again: the new count
            # is durable before the redelivery that carries it, so a crash cannot hand out one delivery
            # more than x-delivery-limit allows. Dispatch holds until the commit (a loop turn or two).
            self._awaiting_commit += 1
            queue.store.messages_returned(queue, counted, self._returns_committed)
        if over_limit:
            over_limit.reverse()
            self.host.dead_letter(queue, over_limit, DELIVERY_LIMIT)
        self._drop_expired()
        self._arm_expiry()
        queue.wake()

    def _returns_committed(self) -> None:
        self._awaiting_commit -= 1
        self.queue.wake()

    def close(self) -> None:
        """The queue is deleted: stop its timers."""
        for timer in (self._expiry_timer, self._unused_timer):
            if timer is not None:
                timer.cancel()
        self._expiry_timer = self._unused_timer = None
