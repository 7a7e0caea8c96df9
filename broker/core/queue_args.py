"""Queue property equivalence on redeclare, with RabbitMQ's "inequivalent arg" texts (rabbit_misc.erl)."""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from protocol.errors import ChannelError, ReplyCode

if TYPE_CHECKING:
    from broker.core.queue import Queue

# rabbit_amqqueue:declare_args(): only these keys take part in equivalence; other arguments are ignored.
EQUIVALENCE_KEYS = (
    "x-expires",
    "x-message-ttl",
    "x-dead-letter-exchange",
    "x-dead-letter-routing-key",
    "x-max-length",
    "x-max-length-bytes",
    "x-max-in-memory-length",
    "x-max-in-memory-bytes",
    "x-max-priority",
    "x-overflow",
    "x-queue-mode",
    "x-single-active-consumer",
    "x-queue-type",
    "x-quorum-initial-group-size",
    "x-max-age",
    "x-stream-max-segment-size-bytes",
    "x-initial-cluster-size",
    "x-queue-leader-locator",
)

_INT32 = range(-(2**31), 2**31)


def field_type(value: Any) -> str:
    """RabbitMQ's name for the field type a client would have used (pika/py-amqp pick signedint vs long by
    size).
    """
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "signedint" if value in _INT32 else "long"
    if isinstance(value, float):
        return "double"
    if isinstance(value, str):
        return "longstr"
    if isinstance(value, bytes | bytearray):
        return "binary"
    if isinstance(value, Decimal):
        return "decimal"
    if isinstance(value, datetime.datetime):
        return "timestamp"
    if isinstance(value, Mapping):
        return "table"
    if isinstance(value, list | tuple):
        return "array"
    return "void"


def _type_class(value: Any) -> str:
    kind = field_type(value)
    return {"signedint": "int", "long": "int", "double": "float"}.get(kind, kind)


def format_value(value: Any) -> str:
    """Erlang's ~tp / ~ts rendering as RabbitMQ prints it in inequivalent-arg texts."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, bytes | bytearray):
        return bytes(value).decode("utf-8", "replace")
    return str(value)


def _typed(value: Any) -> str:
    return f"the value '{format_value(value)}' of type '{field_type(value)}'"


def inequivalent(key: str, resource: str, received: str, current: str) -> ChannelError:
    return ChannelError(
        ReplyCode.PRECONDITION_FAILED,
        f"inequivalent arg '{key}' for {resource}: received {received} but current is {current}",
    )


def check_queue_equivalent(
    queue: Queue, durable: bool, auto_delete: bool, arguments: Mapping[str, Any]
) -> None:
    """rabbit_amqqueue:assert_equivalence: durable, auto_delete, then the declare arguments in their fixed
    order.
    """
    resource = f"queue '{queue.name}' in vhost '{queue.vhost}'"
    for key, current, received in (
        ("durable", queue.durable, durable),
        ("auto_delete", queue.auto_delete, auto_delete),
    ):
        if current != received:
            raise inequivalent(key, resource, f"'{format_value(received)}'", f"'{format_value(current)}'")
    for key in EQUIVALENCE_KEYS:
        has_current, has_received = key in queue.arguments, key in arguments
        if not has_current and not has_received:
            continue
        if has_current and has_received:
            current_value, received_value = queue.arguments[key], arguments[key]
            if _type_class(current_value) == _type_class(received_value) and current_value == received_value:
                continue
            raise inequivalent(
                key, resource, f"'{format_value(received_value)}'", f"'{format_value(current_value)}'"
            )
        received_text = _typed(arguments[key]) if has_received else "none"
        current_text = _typed(queue.arguments[key]) if has_current else "none"
        raise inequivalent(key, resource, received_text, current_text)
