"""A message's fates on a channel told to step observers (published, routed, returned, delivered) and how its
deliveries were settled (ack, nack/reject, requeue on close): told to the journal and observers, and to the
store."""

from __future__ import annotations

from broker.core.events.events import EventBus, Fate
from broker.core.model.message import Message
from broker.core.queues.queue import Envelope, Queue
from broker.core.queues.queue_settings import QUORUM
from broker.core.queues.unacked import Delivery
from protocol.errors import ReplyCode


def published_events(
    events: EventBus,
    vhost: str,
    message: Message,
    queues: list[Queue],
    mandatory: bool,
    channel_id: int,
    connection: str,
) -> None:
    """PUBLISHED, ROUTED and (mandatory, unroutable) RETURNED for step observers."""
    events.hot_message(
        Fate.PUBLISHED,
        vhost,
        message,
        exchange=message.exchange,
        routing_key=message.routing_key,
        channel=channel_id,
        connection=connection,
    )
    events.hot_message(
        Fate.ROUTED, vhost, message, queues=[queue.name for queue in queues], mandatory=mandatory
    )
    if not queues and mandatory:
        events.hot_message(Fate.RETURNED, vhost, message, reply_code=int(ReplyCode.NO_ROUTE))


def delivered_event(
    queue: Queue, envelope: Envelope, delivery_tag: int, consumer_tag: str | None, no_ack: bool
) -> None:
    """DELIVERED (and ACKED for an auto-ack delivery) for step observers."""
    assert queue.events is not None
    queue.events.hot_message(
        Fate.DELIVERED,
        queue.vhost,
        envelope.message,
        queue.name,
        consumer_tag=consumer_tag,
        delivery_tag=delivery_tag,
        redelivered=envelope.redelivered,
        no_ack=no_ack,
    )
    if no_ack:
        queue.events.hot_message(Fate.ACKED, queue.vhost, envelope.message, queue.name, auto=True)


def settled_events(
    events: EventBus, deliveries: list[Delivery], requeue: bool | None, closed: bool = False
) -> None:
    """The journal gets the whole settlement in one call, step observers one event per delivery."""
    if events.journal is not None:
        events.journal.settled(deliveries, requeue, closed)
    if events.hot_observers:
        settled_steps(events, deliveries, requeue, closed)


def settled_steps(events: EventBus, deliveries: list[Delivery], requeue: bool | None, closed: bool) -> None:
    """ACKED for acks; NACKED then REQUEUED or DROPPED for nacks and rejects; REQUEUED on channel close."""
    for delivery in deliveries:
        queue, message = delivery.queue, delivery.envelope.message
        if not closed:
            if requeue is None:
                events.hot_message(
                    Fate.ACKED, queue.vhost, message, queue.name, delivery_tag=delivery.delivery_tag
                )
                continue
            events.hot_message(Fate.NACKED, queue.vhost, message, queue.name, requeue=requeue)
        if requeue:
            events.hot_message(Fate.REQUEUED, queue.vhost, message, queue.name)
        elif queue.features is None or queue.features.settings.dead_letter_exchange is None:
            # With a DLX the dead-lettering emits DEAD_LETTERED instead (to every observer).
            events.hot_message(Fate.DROPPED, queue.vhost, message, queue.name, reason="rejected")


def stored_delivery(queue: Queue, envelope: Envelope, no_ack: bool) -> None:
    """A persistent message of a durable queue went out: with no_ack it is gone; otherwise it is marked
    delivered, so a restart brings it back redelivered (a requeued one is marked already). A quorum queue
    marks every delivery: its return cleared the mark, and a message still marked at a restart counts one
    more return (its consumer is gone, as rabbit_fifo counts a consumer's 'down')."""
    store = queue.store
    assert store is not None
    if no_ack:
        store.messages_removed(queue, (envelope,))
    elif not envelope.redelivered or (
        queue.features is not None and queue.features.settings.queue_type == QUORUM
    ):
        store.message_delivered(queue, envelope)


def forget_settled(deliveries: list[Delivery]) -> None:
    """Acked or rejected without requeue: the stored copies go (a dead-lettered copy is stored anew)."""
    for delivery in deliveries:
        queue = delivery.queue
        if queue.store is not None:
            queue.store.messages_removed(queue, (delivery.envelope,))
