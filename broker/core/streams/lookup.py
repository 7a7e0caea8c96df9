"""Whether a queue is a stream, for the places every queue passes through (basic.consume, basic.nack and
basic.reject, recovery, statistics), without importing the stream classes: they load with the first stream
queue, so a broker that never declares one never pays for them (start-up imports only what the
configuration and the clients use)."""

from __future__ import annotations

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


def stream_outcomes(deliveries: list[Delivery], any_outcome: bool) -> tuple[list[Delivery], list[Delivery]]:
    """basic.reject and basic.nack, requeue or not: (the deliveries that take that outcome, the stream
    deliveries settled as acks). Up to 3.13 rabbit_stream_queue:settle refuses every outcome but ack (540, the
    connection closes); with ``any_outcome`` (4.0: "all settle reasons will give credit") a stream delivery
    is settled as an ack would settle it, and the others take the outcome asked."""
    streams = [delivery for delivery in deliveries if stream_of(delivery.queue) is not None]
    if not streams:
        return deliveries, streams
    if not any_outcome:
        from broker.core.streams.stream_queue import not_supported

        raise not_supported(streams[0].queue, "basic.nack and basic.reject")
    return [delivery for delivery in deliveries if stream_of(delivery.queue) is None], streams
