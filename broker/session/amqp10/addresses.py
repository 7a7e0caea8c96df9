"""RabbitMQ 4's AMQP 1.0 addresses. v2: a target or source names a queue, or an exchange with or without a
routing key; each segment percent-encoded (RFC 3986), as rabbit_amqp_session parses them. v1 (deprecated,
still accepted by 4.0): /exchange/:exchange[/:key], /topic/:key (amq.topic), /amq/queue/:queue,
/queue/:queue and a bare queue name (both declare the queue when missing), and /queue (the subject names
the queue), as observed on RabbitMQ 4.0.5."""

from __future__ import annotations

from typing import NamedTuple
from urllib.parse import unquote

QUEUES = "/queues/"
EXCHANGES = "/exchanges/"


class Address(NamedTuple):
    """A parsed address: the exchange and routing key to publish with, or the queue (``queue`` set)."""

    exchange: str
    routing_key: str | None  # None: no routing key in the address (v2: the empty key; v1: the subject)
    queue: str | None = None
    declare: bool = False  # v1 /queue/:queue and bare names: the queue is declared when missing
    v1: bool = False


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


def parse_v1(address: str) -> Address | None:
    """``address`` as a v1 address, or None when it is not one."""
    if not address.startswith("/"):
        return Address("", address, address, declare=True, v1=True) if address else None
    parts = address[1:].split("/")
    match parts:
        case ["exchange", exchange]:
            return Address(exchange, None, v1=True)
        case ["exchange", exchange, key]:
            return Address(exchange, key, v1=True)
        case ["topic", key]:
            return Address("amq.topic", key, v1=True)
        case ["amq", "queue", queue] if queue:
            return Address("", queue, queue, v1=True)
        case ["queue", queue] if queue:
            return Address("", queue, queue, declare=True, v1=True)
        case ["queue"]:
            return Address("", None, v1=True)
    return None
