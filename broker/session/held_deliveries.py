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
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from broker.core.queues.queue import Consumer, ConsumerChannel, Envelope, Queue
    from broker.session.ports import ChannelPort


class HeldDeliveries:
    """Implements ``broker.core.queues.queue.ConsumerChannel`` for one channel's consumers during a
    catch-up."""

    def __init__(self, channel: ChannelPort) -> None:
        self.channel = channel
        self.held: list[tuple[Consumer, Queue, Envelope]] = []

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
        self.channel.consumer_cancelled(consumer)

    def release(self) -> None:
        """Deliver what the queue handed out, after the channel's reply."""
        channel = self.channel
        for consumer, queue, envelope in self.held:
            if not consumer.no_ack:
                consumer.unacked -= 1
            channel.deliver(consumer, queue, envelope)
        self.held.clear()


def catch_up_holding(channel: ChannelPort, queue: Queue) -> HeldDeliveries:
    """Run ``queue``'s pending dispatch now; what it hands ``channel``'s consumers waits for ``release``."""
    held = HeldDeliveries(channel)
    mine = [consumer for consumer in channel.consumers.values() if consumer.queue is queue]
    originals: list[ConsumerChannel] = []
    for consumer in mine:
        originals.append(consumer.channel)
        consumer.channel = held
    try:
        queue.dispatcher.catch_up(queue)
    finally:
        for consumer, original in zip(mine, originals, strict=True):
            consumer.channel = original
    return held
