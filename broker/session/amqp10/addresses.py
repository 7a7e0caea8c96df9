"""RabbitMQ 4's v2 addresses (its AMQP 1.0 address format): a target or source names a queue, or an exchange
with or without a routing key; each segment percent-encoded (RFC 3986), as rabbit_amqp_session parses them."""

from __future__ import annotations

from typing import NamedTuple
from urllib.parse import unquote

QUEUES = "/queues/"
EXCHANGES = "/exchanges/"


class Address(NamedTuple):
    """A parsed address: the exchange and routing key to publish with, or the queue (``queue`` set)."""

    exchange: str
    routing_key: str | None  # None: `/exchanges/:exchange`, no routing key in the address
    queue: str | None = None


def parse(address: str) -> Address | None:
    """``address`` as a v2 address, or None when it is not one."""
    if address.startswith(QUEUES):
        name = address[len(QUEUES) :]
        if name and "/" not in name:
            queue = unquote(name)
            return Address("", queue, queue)
        return None
    if address.startswith(EXCHANGES):
        rest = address[len(EXCHANGES) :]
        exchange, slash, key = rest.partition("/")
        if not exchange or "/" in key:
            return None
        exchange = unquote(exchange)
        if exchange == "amq.default":  # RabbitMQ 4's name for the default exchange in addresses
            exchange = ""
        return Address(exchange, unquote(key) if slash else None)
    return None
