"""Queue property equivalence on redeclare (rabbit_amqqueue:assert_equivalence), with RabbitMQ's texts."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from broker.core.model.equivalence import MISSING, check_arg_equivalence, inequivalent, quoted

if TYPE_CHECKING:
    from broker.core.queues.queue import Queue

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


def check_queue_equivalent(
    queue: Queue, durable: bool, auto_delete: bool, arguments: Mapping[str, Any]
) -> None:
    """durable, then auto_delete, then the declare arguments in their fixed order."""
    resource = f"queue '{queue.name}' in vhost '{queue.vhost}'"
    for key, current, received in (
        ("durable", queue.durable, durable),
        ("auto_delete", queue.auto_delete, auto_delete),
    ):
        if current != received:
            raise inequivalent(key, resource, quoted(received), quoted(current))
    for key in EQUIVALENCE_KEYS:
        check_arg_equivalence(key, queue.arguments.get(key, MISSING), arguments.get(key, MISSING), resource)
