"""What observers (the message history) see of `POST /api/queues/{vhost}/{name}/get`: RabbitMQ runs it as
basic.get on a channel of its own and settles by the ack mode, so each message taken is DELIVERED (to no
consumer) and then ACKED (ack_requeue_false: auto-ack), or NACKED and REQUEUED (the *_requeue_true modes), or
NACKED and dropped (reject_requeue_false without a dead-letter exchange; with one, the dead-lettering reports
DEAD_LETTERED). Free while nobody observes the steps."""

from __future__ import annotations

from broker.core.events.events import Fate
from broker.core.queues.queue import Envelope, Queue
from broker.session.fates import delivered_event


def got_events(queue: Queue, envelopes: list[Envelope], ackmode: str) -> None:
    """Call before the messages are requeued or dead-lettered (a requeue marks them redelivered)."""
    events = queue.events
    if events is None or not events.hot_observers:
        return
    auto_ack = ackmode == "ack_requeue_false"
    requeue = ackmode.endswith("requeue_true")
    for envelope in envelopes:
        delivered_event(queue, envelope, 0, None, auto_ack)
        if auto_ack:
            continue
        message = envelope.message
        events.hot_message(Fate.NACKED, queue.vhost, message, queue.name, requeue=requeue)
        if requeue:
            events.hot_message(Fate.REQUEUED, queue.vhost, message, queue.name)
        elif queue.features is None or queue.features.settings.dead_letter_exchange is None:
            events.hot_message(Fate.DROPPED, queue.vhost, message, queue.name, reason="rejected")
