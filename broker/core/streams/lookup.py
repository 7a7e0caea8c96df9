"""Whether a queue is a stream, for the places every queue passes through (basic.consume, basic.nack and
basic.reject, recovery, statistics), without importing the stream classes: they load with the first stream
queue, so a broker that never declares one never pays for them (start-up imports only what the
configuration and the clients use)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from broker.core.queues.queue_settings import STREAM

if TYPE_CHECKING:
    from broker.core.queues.queue import Queue
    from broker.core.queues.unacked import Delivery
    from broker.core.streams.stream_queue import StreamPath


def stream_of(queue: Queue) -> StreamPath | None:
    """The queue's stream path, or None for a classic or quorum queue."""
    features = queue.features
    if features is None or features.settings.queue_type != STREAM:
        return None
    from broker.core.streams.stream_queue import StreamPath  # loaded: this queue is a stream

    return features if isinstance(features, StreamPath) else None


def refuse_stream_settle(deliveries: Iterable[Delivery]) -> None:
    """basic.reject and basic.nack, requeue or not, on a stream delivery: rabbit_stream_queue:settle refuses
    every outcome but ack (540, the connection closes)."""
    for delivery in deliveries:
        if stream_of(delivery.queue) is not None:
            from broker.core.streams.stream_queue import not_supported

            raise not_supported(delivery.queue, "basic.nack and basic.reject")
