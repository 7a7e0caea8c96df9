# The C lane (broker/journal/_lane.c); the behaviour is broker.journal.lane.PyLane's.
from collections.abc import Callable, Iterator, Sequence
from typing import Final

from broker.core.model.message import Message
from broker.core.queues.queue import Envelope, Queue
from broker.core.queues.unacked import Delivery
from broker.journal.lane import LaneOwner
from broker.journal.rows import RowBuffer

DELIVERY_FORMAT: Final[str]
CODES: Final[tuple[int, int, int]]

def bind(
    message: type[Message], envelope: type[Envelope], delivery: type[Delivery], rows: type[RowBuffer]
) -> None: ...

class NativeLane:
    now: int
    deliveries: RowBuffer
    @property
    def inflight(self) -> dict[Envelope, int]: ...
    def __init__(
        self,
        owner: LaneOwner,
        deliveries: RowBuffer,
        clock: Callable[[], int],
        call_soon: Callable[[Callable[[], None]], object] | None,
        ids: Iterator[int],
        rng: Callable[[], float],
        sample: float,
        full: bool,
        quiet: bool,
    ) -> None: ...
    def tick(self) -> int: ...
    def expire(self) -> None: ...
    def published(
        self,
        vhost: str,
        message: Message,
        queues: Sequence[Queue],
        mandatory: bool,
        channel: int,
        connection: str,
    ) -> None: ...
    def delivered(self, queue: Queue, envelope: Envelope, delivery_tag: int, no_ack: bool) -> None: ...
    def settled(self, deliveries: list[Delivery], requeue: bool | None, closed: bool) -> None: ...
