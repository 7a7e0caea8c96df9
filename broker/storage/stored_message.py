"""A stored message row back as a message: every store keeps a message as its exchange, routing key, raw
content header and body (broker.storage.base), whichever queue type or exchange held it."""

from __future__ import annotations

from broker.core.model.message import Message
from protocol.content_header import parse_content_header


def message_of(exchange: str, routing_key: str, header: bytes, body: bytes) -> Message:
    """A stored entry as a message (parse_content_header caches the parse of a repeated header)."""
    info = parse_content_header(header)
    return Message(
        exchange,
        routing_key,
        header,
        body,
        info.headers,
        info.delivery_mode or 1,
        info.priority,
        info.expiration,
    )
