"""Per-channel tracking of delivered, unacknowledged messages by delivery tag."""

from __future__ import annotations

from collections.abc import Iterator

from broker.core.queues.queue import Consumer, Envelope, Queue
from broker.core.queues.queue_bytes import unacked_persistent
from protocol.errors import ChannelError, ReplyCode


class Delivery:
    """One unacknowledged delivery. ``consumer`` is None for basic.get."""

    __slots__ = ("consumer", "delivery_tag", "envelope", "queue")

    def __init__(
        self, delivery_tag: int, queue: Queue, envelope: Envelope, consumer: Consumer | None
    ) -> None:
        self.delivery_tag = delivery_tag
        self.queue = queue
        self.envelope = envelope
        self.consumer = consumer


def unknown_delivery_tag(tag: int) -> ChannelError:
    return ChannelError(ReplyCode.PRECONDITION_FAILED, f"unknown delivery tag {tag}")


class UnackedTracker:
    """Delivery tags increase per channel from 1; the dict keeps them in delivery order for ``multiple``."""

    __slots__ = ("_entries", "next_tag")

    def __init__(self) -> None:
        self._entries: dict[int, Delivery] = {}
        self.next_tag = 1

    def __len__(self) -> int:
        return len(self._entries)

    def allocate_tag(self) -> int:
        tag = self.next_tag
        self.next_tag = tag + 1
        return tag

    def track(self, delivery: Delivery) -> None:
        self._entries[delivery.delivery_tag] = delivery
        queue = delivery.queue
        queue.unacked += 1
        # Byte counters (broker.core.queues.queue_bytes) inline: this runs once per delivery.
        queue.unacked_bytes += len(delivery.envelope.message.body)
        if queue.durable:
            unacked_persistent(queue, delivery.envelope, 1)
        if delivery.consumer is not None:
            delivery.consumer.unacked += 1

    def settle(self, delivery_tag: int, multiple: bool) -> list[Delivery]:
        """Remove and return the deliveries an ack/nack/reject names, in tag order.

        As rabbit_channel:collect_acks: ``multiple`` with tag 0 means all outstanding; otherwise the tag
        itself must
        be outstanding, or the channel closes with 406 "unknown delivery tag N" (a double ack included).
        """
        entries = self._entries
        if multiple and delivery_tag == 0:
            settled = list(entries.values())
            entries.clear()
        elif not multiple:
            return [self.settle_one(delivery_tag)]
        elif delivery_tag not in entries:
            raise unknown_delivery_tag(delivery_tag)
        else:
            settled = []
            for tag in list(entries):
                if tag > delivery_tag:
                    break
                settled.append(entries.pop(tag))
        for delivery in settled:
            _released(delivery)
        return settled

    def settle_one(self, delivery_tag: int) -> Delivery:
        """The one delivery a single ack/nack/reject names (``settle`` without ``multiple``)."""
        delivery = self._entries.pop(delivery_tag, None)
        if delivery is None:
            raise unknown_delivery_tag(delivery_tag)
        _released(delivery)
        return delivery

    def restore(self, deliveries: list[Delivery]) -> None:
        """Put settled deliveries back (tx.rollback), keeping tag order for later ``multiple`` settlements."""
        if not deliveries:
            return
        for delivery in deliveries:
            self.track(delivery)
        self._entries = dict(sorted(self._entries.items()))

    def outstanding(self) -> Iterator[Delivery]:
        """The unacked deliveries, oldest (lowest tag) first."""
        return iter(self._entries.values())

    def take_all(self) -> list[Delivery]:
        """Every outstanding delivery (channel closing, basic.recover), counters released."""
        return self.settle(0, True)


def _released(delivery: Delivery) -> None:
    """A delivery left the unacked state: its queue's and consumer's counters give it back."""
    queue = delivery.queue
    queue.unacked -= 1
    queue.unacked_bytes -= len(delivery.envelope.message.body)
    if queue.durable:
        unacked_persistent(queue, delivery.envelope, -1)
    if delivery.consumer is not None:
        delivery.consumer.unacked -= 1


def requeue_deliveries(deliveries: list[Delivery]) -> None:
    """Return deliveries to their queues at their original positions, one requeue call per queue."""
    by_queue: dict[Queue, list[Envelope]] = {}
    for delivery in deliveries:
        by_queue.setdefault(delivery.queue, []).append(delivery.envelope)
    for queue, envelopes in by_queue.items():
        queue.requeue(envelopes)
