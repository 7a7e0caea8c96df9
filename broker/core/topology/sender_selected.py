"""Sender-selected distribution (CC / BCC headers) and routing a message under extra routing keys."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, cast

from broker.core.exchanges.exchange import Exchange
from broker.core.exchanges.router import Router
from broker.core.model.message import Message
from broker.core.topology.dead_letter import HeaderRewriter, header_routes

if TYPE_CHECKING:
    from broker.core.queues.queue import Queue


def rewritten(
    message: Message, rewrite: HeaderRewriter, set_headers: Mapping[str, Any], remove: tuple[str, ...] = ()
) -> Message:
    """A copy of ``message`` with headers set or removed, in the decoded headers and the raw header bytes.
    A message kept in the form of the protocol it was published in (an AMQP 1.0 message: a subclass with a
    ``with_content_header`` of its own) keeps that form when headers are only set (a quorum queue's
    x-delivery-count), as RabbitMQ 4 keeps a message in its protocol; its copy carries the new 0-9-1 form."""
    headers = {k: v for k, v in (message.headers or {}).items() if k not in remove}
    headers.update(set_headers)
    kind = type(message)
    if not remove and kind is not Message and "with_content_header" in vars(kind):
        payload = rewrite(message.header_payload, dict(set_headers), (), False)
        return message.with_content_header(payload, headers)
    return Message(
        message.exchange,
        message.routing_key,
        rewrite(message.header_payload, dict(set_headers), remove, False),
        message.body,
        headers,
        message.delivery_mode,
        message.priority,
        message.expiration,
        message.ttl,
    )


def route_keys(router: Router, exchange: Exchange, message: Message, keys: list[str]) -> list[Queue]:
    """The queues ``message`` reaches through ``exchange`` with each of ``keys`` as its routing key."""
    found: dict[Queue, None] = {}
    for key in keys:
        probe = message
        if key != message.routing_key:
            probe = Message(message.exchange, key, message.header_payload, message.body, message.headers)
        found.update(dict.fromkeys(cast("list[Queue]", router.route(exchange, probe))))
    return list(found)


def sender_selected(
    router: Router, exchange: Exchange, message: Message, queues: list[Queue], rewrite: HeaderRewriter | None
) -> tuple[list[Queue], Message]:
    """CC and BCC headers add routing keys; BCC is removed from the message queues receive (RabbitMQ spec
    deviation 15)."""
    extra = header_routes(message.headers, "CC") + header_routes(message.headers, "BCC")
    found = dict.fromkeys(queues)
    # Hash exchange types pick one destination from all the keys at once (consistent hash: the first;
    # modulus hash: the list), so the extra keys add no routes there (checked against RabbitMQ 3.10.8).
    if not getattr(exchange.kind, "hashes_routing_keys", False):
        found.update(dict.fromkeys(route_keys(router, exchange, message, extra)))
    if message.headers is not None and "BCC" in message.headers and rewrite is not None:
        message = rewritten(message, rewrite, {}, ("BCC",))
    return list(found), message
