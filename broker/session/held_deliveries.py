"""A queue's pending dispatch run before a channel's request of it, with this channel's deliveries held back
until the channel has sent its own reply: RabbitMQ's order for basic.get and queue.purge after an ack,
nack, reject or recover in the same read.

rabbit_amqqueue_process handles the ack (or requeue) first and hands the freed messages to its consumers,
then the get or purge; the channel process meanwhile waits for the queue's answer, sends get-ok / purge-ok,
and only then the deliveries, which reached it as casts: get-ok takes the next delivery tag and the deliveries
the ones after it. RabbitMQ 3.10.8, one read of ack + get with a consumer at prefetch 1 holding m0 of m0, m1,
m2: get-ok (tag 2, m2, message_count 0), then deliver (tag 3, m1); ack + purge: purge-ok (1), then deliver m1.

While the dispatch runs, this channel's consumers of the queue see a stand-in channel that records what the
queue hands them and counts it against their prefetch; `HeldDeliveries.release` then delivers for real, in
the queue's order. Consumers on other channels get theirs at once, as their own channel processes would.

queue.delete holds the same way, and also the queue's cancelling of this channel's consumers: the queue
process answers the delete and then exits, and rabbit_channel cancels (basic.cancel) the consumers it still
maps to the queue only when the queue's 'DOWN' reaches it (handle_consuming_queue_down_or_eol), behind what
its mailbox already holds: the frames of the same read. RabbitMQ 3.10.8, a consumer's own channel deleting
its queue: delete-ok, then basic.cancel; ack + delete in one read at prefetch 1: delete-ok, the delivery the
ack freed, basic.cancel; delete (nowait) + exchange.declare: declare-ok, then basic.cancel; delete + the
client's basic.cancel: delete-ok, cancel-ok, and no basic.cancel.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from broker.core.queues.queue import Consumer, ConsumerChannel, Envelope, Queue
    from broker.session.ports import ChannelPort


class HeldDeliveries:
    """Implements ``broker.core.queues.queue.ConsumerChannel`` for one channel's consumers of one queue while
    the channel's request of that queue runs (`standing_in`)."""

    def __init__(self, channel: ChannelPort) -> None:
        self.channel = channel
        self.held: list[tuple[Consumer, Queue, Envelope]] = []
        self.cancelled: list[Consumer] = []

    def can_deliver(self, consumer: Consumer) -> bool:
        channel = self.channel
        limit = channel.global_prefetch
        if limit and not consumer.no_ack and len(channel.unacked) + len(self.held) >= limit:
            return False
        return channel.can_deliver(consumer)

    def deliver(self, consumer: Consumer, queue: Queue, envelope: Envelope) -> None:
        self.held.append((consumer, queue, envelope))
        if not consumer.no_ack:
            consumer.unacked += 1  # the per-consumer prefetch sees it now; the real delivery counts it again

    def consumer_cancelled(self, consumer: Consumer) -> None:
        self.cancelled.append(consumer)

    @contextmanager
    def standing_in(self, queue: Queue) -> Iterator[None]:
        """Run ``queue``'s pending dispatch now; until the block ends, what the queue hands the channel's
        consumers or cancels of them is held here, for `release`."""
        mine = [consumer for consumer in self.channel.consumers.values() if consumer.queue is queue]
        originals: list[ConsumerChannel] = []
        for consumer in mine:
            originals.append(consumer.channel)
            consumer.channel = self
        try:
            queue.dispatcher.catch_up(queue)
            yield
        finally:
            for consumer, original in zip(mine, originals, strict=True):
                consumer.channel = original

    def release(self) -> None:
        """Deliver what the queue handed out, after the channel's reply; the consumers the queue cancelled
        are cancelled (basic.cancel) once the read's frames are handled."""
        channel = self.channel
        for consumer, queue, envelope in self.held:
            if not consumer.no_ack:
                consumer.unacked -= 1
            channel.deliver(consumer, queue, envelope)
        self.held.clear()
        for consumer in self.cancelled:
            channel.conn.after_read.append(partial(channel.consumer_cancelled, consumer))
        self.cancelled.clear()


def catch_up_holding(channel: ChannelPort, queue: Queue) -> HeldDeliveries:
    """Run ``queue``'s pending dispatch now; what it hands ``channel``'s consumers waits for ``release``."""
    held = HeldDeliveries(channel)
    with held.standing_in(queue):
        pass
    return held
