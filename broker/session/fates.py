"""How deliveries were settled (ack, nack/reject, requeue on close), told to the journal and observers."""

from __future__ import annotations

from broker.core.events import EventBus, Fate
from broker.core.unacked import Delivery


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
