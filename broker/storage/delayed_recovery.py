"""The messages durable ``x-delayed-message`` exchanges held, back on their exchanges at start-up (after the
queues' own messages): each is held until its stored due time, and one that came due while the broker was
down is routed at the first loop turn, as the plugin's first timer after a restart does."""

from __future__ import annotations

import structlog

from broker.core.broker import Broker
from broker.core.exchanges.delayed import DelayedMessageExchangeType
from broker.storage.base import Store
from broker.storage.stored_message import message_of

log = structlog.get_logger("warrenmq.storage")


def recover_delayed(broker: Broker, store: Store, clean: bool = True) -> int:
    """Returns how many held messages came back. A row whose exchange did not come back (refused at recovery)
    stays in the store untouched, like the exchange's own row. After a crash (``clean`` false), the copies of
    those already due are marked redelivered (see `DelayedMessageExchangeType.restore`)."""
    restored = 0
    for key, vhost_name, holder, due_ms, exchange, routing_key, header, body in store.delayed_messages():
        vhost = broker.vhosts.get(vhost_name)
        found = vhost.exchanges.get(holder) if vhost is not None else None
        kind = found.kind if found is not None else None
        if not isinstance(kind, DelayedMessageExchangeType):
            log.error("recovery_skipped", kind="delayed message", vhost=vhost_name, name=holder, key=key)
            continue
        kind.restore(message_of(exchange, routing_key, header, body), due_ms, key, after_crash=not clean)
        restored += 1
    return restored
