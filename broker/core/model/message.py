"""The message value shared by every queue a publish reaches (hot-path rule 4)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from broker.core.model.compile_hints import mypyc_attr
from broker.core.model.expiration import parse_expiration
from protocol.errors import AMQPError

# The attributes of a Message, for code that copies one field by field (a compiled Message has no __slots__).
FIELDS: Final = (
    "body",
    "delivery_mode",
    "exchange",
    "expiration",
    "header_payload",
    "headers",
    "journal",
    "message_id",
    "priority",
    "routing_key",
    "ttl",
)


@mypyc_attr(allow_interpreted_subclasses=True)
class Message:
    """One published message. Routed copies share this object; nothing here is mutated after routing.

    ``header_payload`` is the content-header frame payload exactly as the publisher sent it (class id, weight,
    body size, property flags and properties), so deliveries forward it without re-encoding (hot-path rule
    3). The session decodes the few properties the broker acts on into the plain fields below.
    """

    __slots__ = FIELDS

    def __init__(
        self,
        exchange: str,
        routing_key: str,
        header_payload: bytes,
        body: bytes,
        headers: Mapping[str, Any] | None = None,
        delivery_mode: int = 1,
        priority: int | None = None,
        expiration: str | None = None,
        ttl: int | None = None,
    ) -> None:
        self.exchange = exchange
        self.routing_key = routing_key
        self.header_payload = header_payload
        self.body = body
        self.headers = headers
        self.delivery_mode = delivery_mode
        self.priority = priority
        self.expiration = expiration
        # Milliseconds parsed from ``expiration`` (the session validated it): queues read this, not the text.
        self.ttl = ttl if ttl is not None or expiration is None else _parse_ttl(expiration)
        self.message_id = 0  # set by the EventBus when an observer first sees it
        # The journal's mark, set when it samples the message at publish: (publish time in ns, fan-out). None
        # = not journaled, so later steps cost unsampled messages this one attribute test.
        self.journal: tuple[int, int] | None = None

    @property
    def body_size(self) -> int:
        return len(self.body)

    @property
    def persistent(self) -> bool:
        return self.delivery_mode == 2

    def x_header(self, name: str) -> Any:
        """The value of the ``x-`` header ``name`` the broker acts on (a stream's filter value), or None. A
        message published over AMQP 1.0 overrides it: RabbitMQ 4 reads such a value from the message
        annotations only (mc:x_header), not from an application property of the same name."""
        headers = self.headers
        return headers.get(name) if headers else None

    def with_content_header(self, header_payload: bytes, headers: Mapping[str, Any]) -> Message:
        """A copy with another content header and its decoded headers (a stream delivery's
        ``x-stream-offset``), delivered and journaled as this message. A subclass keeps what it adds."""
        copy = Message(
            self.exchange,
            self.routing_key,
            header_payload,
            self.body,
            headers,
            self.delivery_mode,
            self.priority,
            self.expiration,
            self.ttl,
        )
        copy.journal, copy.message_id = self.journal, self.message_id
        return copy

    def __repr__(self) -> str:
        size = len(self.body)
        return f"Message(exchange={self.exchange!r}, routing_key={self.routing_key!r}, body_size={size})"


def _parse_ttl(expiration: str) -> int | None:
    try:
        return parse_expiration(expiration)
    except AMQPError:
        return None
