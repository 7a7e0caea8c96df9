"""SASL for AMQP 1.0 (part 5, 5.3) as RabbitMQ 4.0 answers it: the mechanisms it offers and who a sasl-init
logs in as. PLAIN and AMQPLAIN check the broker's users; ANONYMOUS logs in as anonymous_login_user (guest by
default, rabbit_auth_mechanism_anonymous), so guest's loopback restriction applies to it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from protocol.amqp10.types import Symbol
from protocol.connection import parse_sasl_response
from protocol.errors import AMQPError

if TYPE_CHECKING:
    from broker.core.broker import Broker

# RabbitMQ 4.0.5's sasl-mechanisms, in its order (checked against it).
MECHANISMS: Final = (Symbol("PLAIN"), Symbol("AMQPLAIN"), Symbol("ANONYMOUS"))
_OFFERED: Final = " ".join(MECHANISMS)


def login(
    broker: Broker, mechanism: str, response: bytes, loopback_users: tuple[str, ...], loopback: bool
) -> tuple[str, str | None]:
    """``(username, None)`` when the sasl-init logs in, else ``(username, why)`` with the log's reason."""
    try:
        username, password = parse_sasl_response(mechanism, response, _OFFERED)
    except AMQPError as error:
        return "", error.text
    if not broker.authenticate(username, password):
        return username, f"user '{username}' - invalid credentials"
    if username in loopback_users and not loopback:
        return username, f"user '{username}' can only connect via localhost"
    return username, None
