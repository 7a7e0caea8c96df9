"""What a settled delivery does once its basic.ack, nack or reject takes effect (at once, or at tx.commit):
counters, the journal, requeue or dead-letter, the store's removal, and the queues it frees to dispatch."""

from __future__ import annotations

from typing import TYPE_CHECKING

from broker.core.queues.unacked import Delivery, requeue_deliveries
from broker.core.topology.dead_letter import reject_deliveries
from broker.session.fates import forget_settled, settled_events

if TYPE_CHECKING:
    from broker.session.ports import ChannelPort


def finish_settle(channel: ChannelPort, deliveries: list[Delivery], requeue: bool | None) -> None:
    """``requeue`` None: acked; True: requeued (basic.nack/reject requeue=true); False: dead-lettered or
    dropped."""
    vhost = channel.conn.vhost
    if vhost is not None and vhost.events.stepping:  # an ack per message: the journal is called here
        settled_events(vhost.events, deliveries, requeue)
    if requeue:
        requeue_deliveries(deliveries)
        return
    if requeue is None:
        channel.stats.ack += len(deliveries)
        for delivery in deliveries:
            delivery.queue.stats.ack += 1
    if vhost is not None and vhost.persistence is not None:
        forget_settled(deliveries)
    if requeue is False:
        reject_deliveries(deliveries)


def wake_queues_of(channel: ChannelPort, deliveries: list[Delivery]) -> None:
    """Prefetch came back: the queues of those deliveries (with a channel limit, all) may dispatch."""
    if channel.global_prefetch:
        channel.wake_queues()
    elif len(deliveries) == 1:
        deliveries[0].queue.wake()
    else:
        for queue in {delivery.queue for delivery in deliveries}:
            queue.wake()
