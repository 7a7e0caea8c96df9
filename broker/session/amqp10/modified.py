"""The modified outcome (part 3, 3.4.5) as RabbitMQ 4.0.5 applies it, per queue type.

Every queue type requeues a modified delivery unless ``undeliverable-here`` (then it dead-letters, as
rejected; the session does that part). Only a quorum queue changes the message: rabbit_fifo's ``modify``
counts a ``delivery-failed`` in the message's delivery count, which the next transfer's header carries as
``delivery-count`` (a release or a modified without it does not count there; each return still counts in
``x-delivery-count`` and toward ``x-delivery-limit``), and merges the outcome's message annotations into the
message, requeued or dead-lettered, where a 0-9-1 consumer reads them as headers. A classic queue ignores both
(rabbit_classic_queue turns modify into requeue or discard): its header's delivery-count stays 0. A stream
settles every outcome as accepted (``broker.core.streams.lookup.stream_outcomes``).

4.0.5 takes only ``x-`` symbol keys: another key crashes its session (``function_clause`` in
``settle_op_from_outcome``) before anything is settled, answered here with the same amqp:internal-error."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from broker.core.model.protocol_counters import queue_type_of
from broker.core.queues.queue_features import TimedEnvelope
from broker.core.topology.sender_selected import rewritten
from broker.session.amqp10.convert import Amqp10Message
from broker.session.amqp10.errors import INTERNAL_ERROR, SessionError
from protocol.amqp10.delivery_states import Modified
from protocol.amqp10.types import Symbol

if TYPE_CHECKING:
    from broker.core.queues.unacked import Delivery
    from broker.core.topology.dead_letter import HeaderRewriter


def check_annotations(state: object) -> None:
    """Refuse a modified outcome whose message annotations 4.0.5 cannot take, before anything is settled
    (the deliveries stay unsettled, and go back to their queues when the session ends)."""
    if not isinstance(state, Modified) or not state.message_annotations:
        return
    for key in state.message_annotations:
        if not isinstance(key, Symbol) or not key.startswith("x-"):
            # One line where 4.0.5 sends its Erlang stack trace.
            raise SessionError(INTERNAL_ERROR, f"function_clause: message annotation key {key!r}")


def apply_modified(deliveries: list[Delivery], state: Modified, rewrite: HeaderRewriter | None) -> None:
    """What a quorum queue's ``modify`` does to each of its messages before it is requeued or dead-lettered:
    the failed delivery counted, the annotations merged (as headers of the core's 0-9-1 form, which a 1.0
    receiver gets back as message annotations)."""
    annotations = state.message_annotations or {}
    headers = _headers(annotations)
    for delivery in deliveries:
        envelope = delivery.envelope
        if queue_type_of(delivery.queue.arguments) != "quorum" or not isinstance(envelope, TimedEnvelope):
            continue
        if state.delivery_failed:
            envelope.delivery_failures += 1
        message = envelope.message
        if headers and rewrite is not None:
            message = rewritten(message, rewrite, headers)
        if annotations and isinstance(message, Amqp10Message):
            # A message published over 1.0 keeps every annotation as sent, compound values too.
            if message is envelope.message:  # routed copies share it: annotate a copy
                message = message.with_content_header(message.header_payload, message.headers or {})
            assert isinstance(message, Amqp10Message)
            message.amqp10_annotations = {**message.amqp10_annotations, **annotations}
        envelope.message = message


def delivery_failures(envelope: object) -> int:
    """The header's delivery-count for ``envelope``'s next transfer: its quorum queue's failed deliveries."""
    return envelope.delivery_failures if isinstance(envelope, TimedEnvelope) else 0


def _headers(annotations: dict[Any, Any]) -> dict[str, Any]:
    """The annotations as 0-9-1 header values, with the types RabbitMQ writes (a string or a binary as a
    long string, an integer as a long). Only simple values: 4.0.5's 0-9-1 conversion drops the others (a
    message published over 1.0 keeps them in its 1.0 form; one published over 0-9-1 has only this form, so a
    1.0 receiver does not get them either: a deviation)."""
    headers: dict[str, Any] = {}
    for key, value in annotations.items():
        if isinstance(value, bool | float | bytes):
            headers[str(key)] = value
        elif isinstance(value, str):
            headers[str(key)] = str(value)
        elif isinstance(value, int):
            headers[str(key)] = int(value)
    return headers
