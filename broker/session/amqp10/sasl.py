"""SASL for AMQP 1.0 (part 5, 5.3) as RabbitMQ 4.0 answers it: the mechanisms it offers and who a sasl-init
logs in as. PLAIN and AMQPLAIN check the broker's users; ANONYMOUS logs in as anonymous_login_user (guest by
default, rabbit_auth_mechanism_anonymous), so guest's loopback restriction applies to it; EXTERNAL
(rabbitmq_auth_mechanism_ssl) logs in as the user named by the client's verified TLS certificate
(ssl_cert_login_from), which must exist; no password is checked, and the initial response is not read.

The offer is 4.0.5's default auth_mechanisms (PLAIN, AMQPLAIN, ANONYMOUS) unless rabbitmq.conf lists
``auth_mechanisms.*``, then that list in its order. EXTERNAL is offered on a TLS connection only (with or
without a client certificate: 4.0.5's should_offer asks only whether the socket is TLS), and only with the
plugin on (broker.config leaves it out of the list otherwise)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from protocol.amqp10.types import Symbol
from protocol.connection import parse_sasl_response
from protocol.errors import AMQPError

if TYPE_CHECKING:
    from broker.core.broker import Broker
    from broker.session.config import SessionConfig

# RabbitMQ 4.0.5's default sasl-mechanisms, in its order (checked against it).
MECHANISMS: Final = (Symbol("PLAIN"), Symbol("AMQPLAIN"), Symbol("ANONYMOUS"))
EXTERNAL: Final = "EXTERNAL"


def offered(config: SessionConfig, tls: bool) -> tuple[Symbol, ...]:
    """The sasl-mechanisms a connection is offered (on a TLS listener when ``tls``)."""
    if not config.auth_mechanisms_configured:
        return MECHANISMS
    return tuple(Symbol(name) for name in config.auth_mechanisms if name != EXTERNAL or tls)


def login(
    broker: Broker,
    mechanism: str,
    response: bytes,
    offer: tuple[Symbol, ...],
    peer_cert_login: str | None,
    loopback_users: tuple[str, ...],
    loopback: bool,
) -> tuple[str, str | None]:
    """``(username, None)`` when the sasl-init logs in, else ``(username, why)`` with the log's reason."""
    if mechanism == EXTERNAL and EXTERNAL in offer:
        if peer_cert_login is None:
            return "", "no peer certificate"
        username = peer_cert_login
        if username not in broker.access.users:
            return username, f"user '{username}' - invalid credentials"
    else:
        try:
            username, password = parse_sasl_response(mechanism, response, " ".join(offer))
        except AMQPError as error:
            return "", error.text
        if not broker.authenticate(username, password):
            return username, f"user '{username}' - invalid credentials"
    if username in loopback_users and not loopback:
        return username, f"user '{username}' can only connect via localhost"
    return username, None
