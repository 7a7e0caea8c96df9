"""Runs queue dispatch in bounded batches once per loop turn (hot-path rule 6); the loop is injected, so this
stays pure.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol


class Dispatchable(Protocol):
    """What the dispatcher runs: a queue (`broker.core.queues.queue.Queue`)."""

    def dispatch(self, budget: int) -> bool:
        """Deliver up to ``budget`` messages; True when more could be delivered right away."""
        ...


class Dispatcher:
    """Queues with work ask to be woken; one scheduled callback serves them all, each for at most ``batch``
    messages.

    A queue that still has deliverable work after its batch is woken again, so one deep queue cannot starve
    the
    others or the socket reads of the loop.
    """

    def __init__(self, call_soon: Callable[[Callable[[], None]], Any], batch: int = 512) -> None:
        self._call_soon = call_soon
        self._batch = batch
        self._pending: dict[Dispatchable, None] = {}
        self._scheduled = False

    def wake(self, queue: Dispatchable) -> None:
        self._pending[queue] = None
        if not self._scheduled:
            self._scheduled = True
            self._call_soon(self.run)

    def catch_up(self, queue: Dispatchable) -> None:
        """Run ``queue``'s pending dispatch now, one batch, instead of at the scheduled pass: a channel is
        about to make a request of the queue that RabbitMQ's queue process would handle only after the
        deliveries that earlier requests (an ack, a requeue, a publish) made possible."""
        if queue not in self._pending:
            return
        del self._pending[queue]
        if queue.dispatch(self._batch):
            self.wake(queue)

    @property
    def idle(self) -> bool:
        """No dispatch pass is scheduled (the test `settle()` barrier waits for this)."""
        return not self._scheduled and not self._pending

    def run(self) -> None:
        pending = self._pending
        self._pending = {}
        self._scheduled = False
        batch = self._batch
        for queue in pending:
            if queue.dispatch(batch):
                self.wake(queue)
