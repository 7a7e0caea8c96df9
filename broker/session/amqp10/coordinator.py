"""Transactions over AMQP 1.0 (part 4): a sender link whose target is the transaction coordinator. RabbitMQ
4.0.5 has none: rabbit_amqp_session ends the session at such an attach with amqp:not-implemented
"Transactions not supported", and so does WarrenMQ under the 4.x profiles."""

from __future__ import annotations

from typing import Final

from broker.session.amqp10.errors import NOT_IMPLEMENTED, SessionError
from protocol.amqp10.performatives import Attach
from protocol.amqp10.types import Described

# The coordinator's descriptor (part 4, 4.5.1), by code or by name.
_COORDINATOR: Final = (0x0000_0000_0000_0030, "amqp:coordinator:list")


def refuse_coordinator(attach: Attach) -> None:
    """Raise the session error 4.0.5 answers with when ``attach`` is a sender's to the coordinator."""
    target = attach.target
    if not attach.role and isinstance(target, Described) and target.descriptor in _COORDINATOR:
        raise SessionError(NOT_IMPLEMENTED, "Transactions not supported")
