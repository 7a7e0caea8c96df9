"""What each client's program observes on RabbitMQ, by the spec and the oracle (see tests/compat/clients).

The observation has the same keys in every language; values differ only where a client library reports a
thing its own way (how a refused operation surfaces, whether an ack carries its ``multiple`` flag). ``P``
stands for the test's name prefix.
"""

from __future__ import annotations

from typing import Any

from .expected_spring import SPRING_OBSERVATION

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
    # lapin's Display of the error that the channel.close gave the next operation on the channel.
    "rust": "protocol error: AMQP soft error: NOT-FOUND: " + NO_EXCHANGE,
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


# The Java programs (current client and Debian's 5.0.0) also do these.
_JAVA_ONLY: dict[str, Any] = {
    # DELETE /api/connections/NAME closes the connection with 320 and RabbitMQ's default reason; the client
    # recovers the connection, channel, exchange, exclusive queue, binding and consumer, which then gets
    # the message published after recovery.
    "recovery": {
        "management_delete": 204,
        "close": {
            "hard_error": True,
            "initiated_by_application": False,
            "code": 320,
            "text": "CONNECTION_FORCED - Closed via management plugin",
        },
        "recovered": True,
        "deliveries": ["before", "after"],
        "connection_open": True,
        "channel_open": True,
        "consumers": 1,
    },
    # newConnection(List<Address>) with a first address that refuses connects to the second.
    "failover": {"connected_to_broker": True, "queue_declared": True},
    # The NIO transport: both messages confirmed, then got, then basic.get-empty.
    "nio": {"confirmed": True, "got": ["n1", "n2", None]},
}

# The Debian builds run the same source as the current ones.
_SAME_PROGRAM = {"java-debian": "java", "go-debian": "go"}


def expected_observation(client: str) -> dict[str, Any]:
    """The observation ``client``'s program must print against RabbitMQ, and so against WarrenMQ."""
    if client == "spring":
        return dict(SPRING_OBSERVATION)
    client = _SAME_PROGRAM.get(client, client)
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
    if client == "java":
        observation.update(_JAVA_ONLY)
    return observation
