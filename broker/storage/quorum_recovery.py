"""A quorum queue's stored messages as envelopes at start-up: their delivery counts back on them (and in their
``x-delivery-count`` header), and those still checked out when the broker stopped set apart, so that recovery
returns them as rabbit_fifo returns a gone consumer's messages (one more delivery count)."""

from __future__ import annotations

from broker.core.queues.queue import Envelope, Queue
from broker.core.queues.queue_features import TimedEnvelope
from broker.storage.base import KEY_SEQ_BITS, MessageRow
from broker.storage.stored_message import message_of

_SEQ_MASK = (1 << KEY_SEQ_BITS) - 1


def quorum_envelopes(
    queue: Queue, rows: list[MessageRow], counts: dict[int, int], clean: bool
) -> tuple[list[Envelope], list[Envelope]]:
    """(ready envelopes, checked-out envelopes), each in publish order. A message comes back redelivered when
    it was delivered or returned before, and every message does after a crash (``clean`` false)."""
    ready: list[Envelope] = []
    checked_out: list[Envelope] = []
    host = queue.host
    for key, exchange, routing_key, header, body, expires_at, delivered in rows:
        message = message_of(exchange, routing_key, header, body)
        count = counts.get(key, 0)
        if count and host is not None:
            message = host.with_delivery_count(message, count)
        envelope = TimedEnvelope(key & _SEQ_MASK, message, expires_at, bool(delivered or count) or not clean)
        envelope.delivery_count = count
        (checked_out if delivered else ready).append(envelope)
    return ready, checked_out
