"""What each client's program observes on RabbitMQ, by the spec and the oracle (see tests/compat/clients).

The observation has the same keys in every language; values differ only where a client library reports a
thing its own way (how a refused operation surfaces, whether an ack carries its ``multiple`` flag). ``P``
stands for the test's name prefix.
"""

from __future__ import annotations

from typing import Any

NO_EXCHANGE = "NOT_FOUND - no exchange 'P-missing' in vhost '/'"
# basic.publish (class 60, method 40) to a missing exchange: the channel is closed with 404 and the ids of the
# method that failed, which clients put in the exception they raise.
_PUBLISH_CLASS_ID, _PUBLISH_METHOD_ID = 60, 40

_RETURNED_R1 = ["return", 312, "NO_ROUTE", "", "P-nowhere", "r1"]
_RETURNED_R2 = ["return", 312, "NO_ROUTE", "", "P-nowhere", "r2"]

_COMMON: dict[str, Any] = {
    "channel": {"first_closed": True, "second_open": True},
    # Each mandatory, unroutable message comes back with basic.return and then its own basic.ack
    # (multiple=false, sent while the publish is handled), in publish order; the routed one is acked last.
    "confirms": {"events": [_RETURNED_R1, ["ack", 1], _RETURNED_R2, ["ack", 2], ["ack", 3]]},
    # a acked, b nacked without requeue (dropped), c rejected with requeue: back once with redelivered set.
    "consume": {"deliveries": [["a", False], ["b", False], ["c", False], ["c", True]], "message_count": 0},
    # The requester's reply-to is a generated amq.rabbitmq.reply-to.* name, which a passive queue.declare
    # accepts, and the reply reaches the requester's no-ack consumer.
    "direct_reply_to": {
        "prefix": "amq.rabbitmq.reply-to.",
        "passive_declare": "declare-ok",
        "reply": "pong",
        "correlation_id": "c1",
    },
    # The client asks for a 1 s heartbeat; after 3.5 s idle the connection still works.
    "heartbeats": {"negotiated": 1, "alive": True},
}

_REFUSED_ERROR: dict[str, Any] = {
    "node": "channel 1 closed: " + NO_EXCHANGE + " (404)",
    "go": {"code": 404, "reason": NO_EXCHANGE, "server": True, "recover": True},
    "java": {
        "hard_error": False,
        "initiated_by_application": False,
        "code": 404,
        "text": NO_EXCHANGE,
        "class_id": _PUBLISH_CLASS_ID,
        "method_id": _PUBLISH_METHOD_ID,
    },
    "ruby": {
        "class": "Bunny::NotFound",
        "message": NO_EXCHANGE,
        "code": 404,
        "class_id": _PUBLISH_CLASS_ID,
        "method_id": _PUBLISH_METHOD_ID,
    },
    "php": {
        "class": "AMQPProtocolChannelException",
        "code": 404,
        "message": NO_EXCHANGE,
        "method_sig": [_PUBLISH_CLASS_ID, _PUBLISH_METHOD_ID],
    },
}


def expected_observation(client: str) -> dict[str, Any]:
    """The observation ``client``'s program must print against RabbitMQ, and so against WarrenMQ."""
    observation = {key: dict(value) for key, value in _COMMON.items()}
    if client in ("java", "node"):
        # The Java client's ConfirmListener is told each ack's multiple flag; the Node.js program reads it
        # where the client handles the frame.
        events = [_RETURNED_R1, ["ack", 1, False], _RETURNED_R2, ["ack", 2, False], ["ack", 3, False]]
        observation["confirms"] = {"events": events}
    observation["refused"] = {
        "error": _REFUSED_ERROR[client],
        "channel_closed": True,
        "connection_open": True,
    }
    return observation
