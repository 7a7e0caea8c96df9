"""RabbitMQ 4.0's v1 addresses /queue/:queue and bare queue names declare their queue when it is missing
(observed on 4.0.5), for sender and receiver links alike."""

from __future__ import annotations

from typing import TYPE_CHECKING

from broker.session.amqp10 import addresses
from broker.session.amqp10.errors import UNAUTHORIZED_ACCESS, SessionError, condition_of
from protocol.errors import AMQPError

if TYPE_CHECKING:
    from broker.session.amqp10.ports import SessionPort


def declare_v1_queue(session: SessionPort, address: addresses.Address) -> None:
    """A v1 /queue/:queue (or a bare name) declares its queue when missing, not durable, as RabbitMQ 4.0.5
    does (observed on it)."""
    assert address.queue is not None
    vhost = session.vhost
    if address.queue in vhost.queues:
        return
    if not session.access.allowed("queue", address.queue, "configure"):
        raise SessionError(
            UNAUTHORIZED_ACCESS,
            f"configure access to queue '{address.queue}' in vhost '{vhost.name}' refused for user "
            f"'{session.conn.username}'",
        )
    try:
        vhost.declare_queue(address.queue, None, durable=False)
    except AMQPError as error:
        raise SessionError(condition_of(error), error.text) from None
