"""What the Spring AMQP program (spring/) observes on RabbitMQ, and so must on WarrenMQ. ``P`` stands for the
test's name prefix."""

from __future__ import annotations

from typing import Any

SPRING_OBSERVATION: dict[str, Any] = {
    # RabbitAdmin declared P-x, P-routed and their binding when the context started: a message sent to the
    # exchange with the binding's key is routed to the queue.
    "admin": {"queue_declared": True, "routed": "hello"},
    # Correlated confirms: [correlation id, ack, and for a mandatory message that could not be routed the
    # basic.return's code and text, which Spring attaches to its CorrelationData before the confirm].
    "confirms": {"events": [["r1", True, 312, "NO_ROUTE"], ["m1", True]]},
    # convertSendAndReceive over direct reply-to, answered by a @RabbitListener method's return value.
    "rpc": {"reply": "pong:ping"},
    # Manual ack: m1 acked, m2 nacked with requeue and acked on its redelivery; auto ack: a1 consumed.
    "listeners": {"manual": [["m1", False], ["m2", False], ["m2", True]], "auto": "a1"},
    # Three attempts (two retries), then RejectAndDontRequeueRecoverer: dead-lettered to P-dlq through the
    # default exchange, with an x-death entry naming the queue and the reason.
    "retry": {
        "attempts": 3,
        "dead_lettered": "poison",
        "x_death": {"queue": "P-retry", "reason": "rejected", "count": "1"},
    },
    # A container with two concurrent consumers and a prefetch of 5 consumes all ten messages.
    "concurrency": {"consumed": True, "consumers": 2},
    # Consumer-side batching of eight queued messages in batches of four.
    "batching": {"batch_sizes": [4, 4], "bodies": [f"b{i}" for i in range(8)], "left": 0},
    # invoke() on a transacted template commits both sends; the transaction that throws rolls t3 back.
    "transactions": {"after_invoke": 2, "rolled_back": "roll back", "after_rollback": 2},
}
