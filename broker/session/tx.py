"""A channel's open AMQP transaction: publishes and settlements held until tx.commit (batching, not ACID)."""

from __future__ import annotations

from collections.abc import Callable

from broker.core.model.message import Message
from broker.core.queues.unacked import Delivery, UnackedTracker


class Transaction:
    """RabbitMQ semantics (semantics.md): errors are raised at once, effects wait for commit; returns precede
    commit-ok. Acks are taken out of the unacked set immediately and put back on rollback (rabbit_channel)."""

    def __init__(self) -> None:
        self.publishes: list[tuple[Message, bool]] = []
        self.settlements: list[tuple[list[Delivery], bool | None]] = []

    def commit(
        self,
        route: Callable[[Message, bool], None],
        finish_settle: Callable[[list[Delivery], bool | None], None],
    ) -> None:
        """Route the held publishes, then apply the held settlements (the channel's own two steps)."""
        publishes, settlements = self.publishes, self.settlements
        self.publishes, self.settlements = [], []
        for message, mandatory in publishes:
            route(message, mandatory)
        for deliveries, requeue in settlements:
            finish_settle(deliveries, requeue)

    def rollback(self, tracker: UnackedTracker) -> None:
        self.publishes = []
        self.rollback_settlements(tracker)

    def rollback_settlements(self, tracker: UnackedTracker) -> None:
        settled = [delivery for deliveries, _ in self.settlements for delivery in deliveries]
        self.settlements = []
        tracker.restore(settled)
