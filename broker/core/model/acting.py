"""Who performs the current action: RabbitMQ's ``user_who_performed_action`` (its ActingUser argument).

A context variable, not a shared attribute: each HTTP request runs in its own asyncio task, hence its own
context, and an AMQP method sets it only while its handler runs, so a request awaiting its body while a
channel declares a queue cannot lend its user to the channel's events or borrow the channel's. Events
read it when they are emitted (``EventBus``) and carry it from then on.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

# No user: the broker acts on its own (auto-delete, expiry, a closed connection's queues): RabbitMQ names
# ?INTERNAL_USER ("rmq-internal") in its events.
INTERNAL = ""
ACTOR: ContextVar[str] = ContextVar("warrenmq_actor", default=INTERNAL)


@contextmanager
def acting(user: str) -> Iterator[None]:
    """Events emitted inside name ``user`` (INTERNAL: the broker itself); the previous actor comes back."""
    token = ACTOR.set(user)
    try:
        yield
    finally:
        ACTOR.reset(token)
