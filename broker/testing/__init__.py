"""WarrenMQ as a test double: embedding (`EmbeddedBroker`, `BrokerThread`), inspection and waits, fault
injection, and the pytest plugin (`warrenmq_broker`, `warrenmq_vhost`, `warrenmq_url` fixtures).
"""

from broker.testing.embed import BrokerThread, EmbeddedBroker, amqp_url
from broker.testing.handles import VhostHandle
from broker.testing.inspect import Inspector, MessageRecord, WaitTimeout

__all__ = [
    "BrokerThread",
    "EmbeddedBroker",
    "Inspector",
    "MessageRecord",
    "VhostHandle",
    "WaitTimeout",
    "amqp_url",
]
