"""rabbit_global_counters for AMQP 1.0: what its sessions publish and deliver, per queue type, which
rabbitmq_prometheus shows as the ``protocol="amqp10"`` rows of ``rabbitmq_global_*`` beside AMQP 0-9-1's.
The 0-9-1 rows are read from channels and queues at scrape time; the 1.0 sessions count here (the session
layer increments these, the management reads them)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

# Per queue type: deliveries with and without acknowledgement, redeliveries, acknowledgements.
DELIVER: Final = 0
DELIVER_NO_ACK: Final = 1
REDELIVER: Final = 2
ACK: Final = 3


def queue_type_of(arguments: Mapping[str, Any]) -> str:
    """The queue type the counters are kept by, from a queue's arguments, as the management names it."""
    kind = arguments.get("x-queue-type")
    return kind if kind in ("classic", "quorum", "stream") else "classic"


class ProtocolCounters:
    # A plain class, not a dataclass: a dataclass's methods are compiled at every start.
    __slots__ = (
        "by_queue_type",
        "confirmed",
        "received",
        "received_confirm",
        "routed",
        "unroutable_dropped",
        "unroutable_returned",
    )

    def __init__(self) -> None:
        self.received = 0  # messages received from publishers
        self.received_confirm = 0  # ... of which unsettled (the publisher awaits an outcome)
        self.routed = 0
        self.unroutable_dropped = 0  # unroutable and settled by the publisher
        self.unroutable_returned = 0  # unroutable and unsettled: released back
        self.confirmed = 0  # unsettled messages accepted
        # queue type ("classic", "quorum", "stream") -> [deliver, deliver_no_ack, redeliver, ack]
        self.by_queue_type: dict[str, list[int]] = {}

    def _of(self, queue_type: str) -> list[int]:
        counts = self.by_queue_type.get(queue_type)
        if counts is None:
            counts = self.by_queue_type[queue_type] = [0, 0, 0, 0]
        return counts

    def delivered(self, queue_type: str, no_ack: bool, redelivered: bool) -> None:
        counts = self._of(queue_type)
        counts[DELIVER_NO_ACK if no_ack else DELIVER] += 1
        if redelivered:
            counts[REDELIVER] += 1

    def acknowledged(self, queue_type: str, count: int = 1) -> None:
        self._of(queue_type)[ACK] += count

    def count(self, queue_type: str, field: int) -> int:
        counts = self.by_queue_type.get(queue_type)
        return counts[field] if counts is not None else 0
