"""What RabbitMQ sends, written down once for every suite that checks it (not read from WarrenMQ's code)."""

from __future__ import annotations

# RabbitMQ's connection.start capability table, every flag true (exact list, see the reference §1.1).
CAPABILITIES = {
    "publisher_confirms": True,
    "exchange_exchange_bindings": True,
    "basic.nack": True,
    "consumer_cancel_notify": True,
    "connection.blocked": True,
    "consumer_priorities": True,
    "authentication_failure_close": True,
    "per_consumer_qos": True,
    "direct_reply_to": True,
}
