"""What the management API and Prometheus show of a stream queue: its log holds the messages (ready stays
empty), and /api/queues adds the keys rabbit_stream_queue:info reports (leader, members, online,
committed_offset, first_offset, segments, readers) for streams only."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from broker.core.queues.queue import Queue
from broker.core.streams.lookup import stream_of

if TYPE_CHECKING:
    from broker.core.streams.stream_queue import StreamPath


def ready_messages(queue: Queue) -> int:
    """Messages in the queue not awaiting an ack: a stream's whole log (acks remove nothing from it)."""
    stream = stream_of(queue)
    return len(queue.ready) + len(queue.fresh) if stream is None else stream.log.message_count


def stream_bytes(stream: StreamPath) -> int:
    """The message bodies the stream's segments hold (message_bytes: the sum of the bodies, as for every
    queue). x-max-length-bytes retention counts the segment files as osiris writes them instead
    (``log.size_bytes``, `broker.core.streams.stream_file_bytes`)."""
    return stream.log.body_bytes


def stream_keys(stream: StreamPath, node: str) -> dict[str, Any]:
    """The stream-only keys of /api/queues. One node: it leads and is the only member. ``readers`` maps each
    consumer tag to the next offset it reads (RabbitMQ keys it by reader process)."""
    log = stream.log
    return {
        "committed_offset": log.next_offset - 1,
        "first_offset": log.first_offset,
        "leader": node,
        "members": [node],
        "online": [node],
        "readers": {consumer.consumer_tag: offset for consumer, offset in stream.cursors.items()},
        "segments": len(log.segments),
    }
