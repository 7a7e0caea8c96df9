"""A queue's changes off the per-message path: consumers joining and leaving (basic.consume / basic.cancel /
a channel's end), basic.get, recovery from the store, queue.purge and queue.delete. The message path
(enqueue, dispatch, requeue) stays in `broker.core.queues.queue`; these run once per consumer, per request or
per queue, so they live apart from it.
"""

from __future__ import annotations

from broker.core.model.event_types import Topology, consumer_detail
from broker.core.queues.queue import Consumer, Envelope, Queue
from broker.core.queues.queue_bytes import added_all, cleared, removed
from protocol.errors import ChannelError, ReplyCode


def add_consumer(queue: Queue, consumer: Consumer) -> None:
    if queue.consumers and (consumer.exclusive or queue.consumers[0].exclusive):
        raise ChannelError(
            ReplyCode.ACCESS_REFUSED, f"queue '{queue.name}' in vhost '{queue.vhost}' in exclusive use"
        )
    queue.consumers.append(consumer)
    if not queue.had_consumer and queue.auto_delete and queue.store is not None:
        queue.store.queue_consumed(queue)
    queue.had_consumer = True
    if consumer.arguments and "x-priority" in consumer.arguments:
        queue.use_features()
    if queue.features is not None:
        queue.features.consumer_added(consumer)
    _consumer_event(queue, consumer, added=True)
    queue.wake()


def remove_consumer(queue: Queue, consumer: Consumer) -> None:
    try:
        queue.consumers.remove(consumer)
    except ValueError:
        return
    if queue.features is not None:
        queue.features.consumer_removed()
    _consumer_event(queue, consumer, added=False)
    # auto_delete: deleted once it has had a consumer and the last one is gone (RabbitMQ queues.md).
    if not queue.consumers and queue.auto_delete and queue.on_unused is not None and not queue.deleted:
        queue.on_unused(queue)


def _consumer_event(queue: Queue, consumer: Consumer, added: bool) -> None:
    if queue.events is None or not queue.events.observers:
        return
    kind = Topology.CONSUMER_ADDED if added else Topology.CONSUMER_REMOVED
    queue.events.topology(kind, queue.vhost, queue=queue.name, **consumer_detail(consumer))


def basic_get(queue: Queue) -> Envelope | None:
    """basic.get: the head message, or None when empty."""
    if queue.features is not None:
        return queue.features.get()
    if queue.ready:
        envelope = queue.ready.popleft()
    elif queue.fresh:
        envelope = Envelope(queue.last_seq - len(queue.fresh) + 1, queue.fresh.popleft())
    else:
        return None
    removed(queue, envelope)
    return envelope


def recover_messages(queue: Queue, envelopes: list[Envelope]) -> None:
    """Messages read back from the store, in publish order, before any client connects."""
    if not envelopes:
        return
    ready = queue.ready_envelopes()  # before ``last_seq`` moves: fresh seqs are counted back from it
    queue.last_seq = max(queue.last_seq, envelopes[-1].seq)
    if queue.features is not None:
        queue.features.recover(envelopes)
    else:
        ready.extend(envelopes)
        added_all(queue, envelopes)


def purge_queue(queue: Queue) -> int:
    """queue.purge: drop the ready messages (not the unacked ones); returns how many."""
    ready = queue.ready_envelopes()
    count = len(ready)
    if queue.store is not None:
        queue.store.messages_removed(queue, ready)
    ready.clear()
    cleared(queue)
    if queue.features is not None:
        queue.features.purged()
    return count


def delete_queue(queue: Queue) -> int:
    """Mark deleted, cancel every consumer (server-sent basic.cancel); returns the ready count dropped."""
    queue.deleted = True
    if queue.features is not None:
        queue.features.close()
    count = len(queue.ready) + len(queue.fresh)
    queue.ready.clear()
    queue.fresh.clear()
    cleared(queue)
    consumers = list(queue.consumers)
    queue.consumers.clear()
    for consumer in consumers:
        _consumer_event(queue, consumer, added=False)
        consumer.channel.consumer_cancelled(consumer)
    return count
