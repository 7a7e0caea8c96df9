"""Methods whose reply says "it is stored" answer once what they wrote has committed: exchange and queue
methods as RabbitMQ answers after its Mnesia transaction (a declare-ok, bind-ok or delete-ok never names a
change that a crash right after it loses), and tx.commit, whose commit-ok means responsibility taken
(semantics.md#tx). A method that wrote nothing to the store (a transient or passive declare, a transaction
of transient messages) answers at once."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pamqp import commands
from pamqp.base import Frame

from broker.core.topology.persistence import Persistence
from broker.session.ports import ChannelPort

# exchange.* and queue.*: declare, bind, unbind, delete and purge, the methods that change the store.
_TOPOLOGY_CLASSES = (40, 50)
_TX_COMMIT = commands.Tx.Commit.index


def answers_when_durable(index: int) -> bool:
    """Whether the method of ``index`` (class << 16 | method) waits for the store before it answers."""
    return index >> 16 in _TOPOLOGY_CLASSES or index == _TX_COMMIT


def answer_when_durable(
    channel: ChannelPort, handler: Callable[[Any, Any], None], method: Frame, persistence: Persistence
) -> None:
    """Run ``handler``; what it writes to the client (its reply and any frame after it) waits for the commit
    of what it wrote to the store, if it wrote anything."""
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
