"""Exchange and queue methods answer once what they changed in the store has committed, as RabbitMQ answers
after its Mnesia transaction: a declare-ok, bind-ok or delete-ok never names a change that a crash right
after it loses (kill -9 after queue.declare-ok used to lose a durable queue whose batch had not committed)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pamqp.base import Frame

from broker.core.topology.persistence import Persistence
from broker.session.ports import ChannelPort

# exchange.* and queue.*: declare, bind, unbind, delete and purge, the methods that change the store.
TOPOLOGY_CLASSES = (40, 50)


def answer_when_durable(
    channel: ChannelPort, handler: Callable[[Any, Any], None], method: Frame, persistence: Persistence
) -> None:
    """Run ``handler``; its reply (and any frame after it) waits for the commit of what it wrote, if it
    wrote anything (a transient declare writes nothing and answers at once)."""
    conn = channel.conn
    writes = persistence.writes
    conn.hold_output(None)
    try:
        handler(channel, method)
    finally:
        if persistence.writes != writes:
            conn.hold_output(persistence.batch_id)
        else:
            conn.committed()
