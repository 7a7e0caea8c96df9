"""Connection class (channel 0): start, secure, tune, open and close, as rabbit_reader.erl drives the
handshake.
"""

from __future__ import annotations

import ipaddress
from typing import TYPE_CHECKING, Any

from pamqp import commands
from pamqp.base import Frame

from broker.session import connection_log, lifecycle_events
from broker.session.limits import check_connection_limits
from protocol.codec import encode_heartbeat
from protocol.connection import (
    LOCALES,
    ConnectionState,
    access_refused_login,
    check_connection_method,
    connection_start,
    negotiate_tune,
    parse_sasl_response,
    server_properties,
)
from protocol.errors import HardError, ReplyCode

if TYPE_CHECKING:
    from broker.session.ports import HandshakePort

HEARTBEAT = encode_heartbeat()


def send_start(session: HandshakePort) -> None:
    session.state = ConnectionState.AWAITING_START_OK
    properties = server_properties(
        session.config.product, session.config.product_version, session.config.cluster_name
    )
    session.write(connection_start(properties, offered_mechanisms(session), LOCALES.decode()))


def offered_mechanisms(session: HandshakePort) -> str:
    """The profile's release's default offer, plus EXTERNAL when auth_mechanisms lists it and the peer showed
    a verified TLS certificate (rabbit_auth_mechanism_ssl:should_offer)."""
    offered = session.broker.profile.sasl_mechanisms
    if session.peer_cert_login is not None and "EXTERNAL" in session.config.auth_mechanisms:
        return "EXTERNAL " + offered
    return offered


def handle(session: HandshakePort, method: Frame) -> None:
    check_connection_method(session.state, method.name)
    if isinstance(method, commands.Connection.StartOk):
        _start_ok(session, method)
    elif isinstance(method, commands.Connection.TuneOk):
        _tune_ok(session, method)
    elif isinstance(method, commands.Connection.Open):
        _open(session, method)
    elif isinstance(method, commands.Connection.Close):
        session.client_closed()
    elif isinstance(method, commands.Connection.CloseOk):
        session.connection_lost()
        session.transport.close()
    elif isinstance(method, commands.Connection.UpdateSecret):
        _update_secret(session, method)
    else:
        raise HardError(ReplyCode.COMMAND_INVALID, f"unimplemented method {method.name}")


def _start_ok(session: HandshakePort, method: commands.Connection.StartOk) -> None:
    properties: dict[str, Any] = dict(method.client_properties or {})
    session.client_properties = properties
    if connection_log.client_provided_name(session) is not None:
        connection_log.client_named(session)
    capabilities = properties.get("capabilities") or {}
    session.consumer_cancel_notify = bool(capabilities.get("consumer_cancel_notify", False))
    mechanism = method.mechanism or ""
    response = method.response if isinstance(method.response, bytes) else str(method.response or "").encode()
    if mechanism == "EXTERNAL" and "EXTERNAL" in offered_mechanisms(session):
        # The certificate is the credential: the user must exist, no password is checked (as with
        # rabbit_auth_backend_internal for EXTERNAL).
        username = session.peer_cert_login or ""
        known = username in session.broker.access.users
    else:
        username, password = parse_sasl_response(mechanism, response, offered_mechanisms(session))
        known = session.broker.authenticate(username, password)
    session.mechanism = mechanism
    # rabbit_reader counts every login, a loopback refusal as a failed one (rabbit_core_metrics).
    allowed = known and not (username in session.config.loopback_users and not is_loopback(session.peer))
    session.broker.auth_attempts.record("amqp091", allowed)
    if session.broker.events.notices:
        error = None if known else f"user '{username}' - invalid credentials"
        lifecycle_events.login(session.broker, session.endpoint, username, mechanism, error)
    if not known:
        _login_refused(session, capabilities, f"user '{username}' - invalid credentials")
        return
    if username in session.config.loopback_users and not is_loopback(session.peer):
        # rabbit_access_control:check_user_loopback: refused as a failed login, the reason only in the log.
        _login_refused(session, capabilities, f"user '{username}' can only connect via localhost")
        return
    session.username = username
    session.state = ConnectionState.AWAITING_TUNE_OK
    config = session.config
    session.send(
        0,
        commands.Connection.Tune(
            channel_max=config.channel_max, frame_max=config.frame_max, heartbeat=config.heartbeat_s
        ),
    )


def _login_refused(session: HandshakePort, capabilities: Any, reason: str) -> None:
    """rabbit_reader auth_fail: the reason goes to the log ("PLAIN login refused: ..."); clients advertising
    authentication_failure_close get connection.close 403 with the safe text, others see the socket close."""
    connection_log.login_refused(session, f"{session.mechanism} login refused: {reason}")
    if not capabilities.get("authentication_failure_close", False):
        session.abort()
        return
    raise access_refused_login(session.mechanism)


def is_loopback(peer: str) -> bool:
    """Is the peer ("host:port", as the server names it) a loopback address, IPv4-mapped ones included
    (rabbit_net:is_loopback)? No peer at all is an in-process connection, so local."""
    if not peer:
        return True
    host = peer.rsplit(":", 1)[0].strip("[]")
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped.is_loopback
    return address.is_loopback


def _tune_ok(session: HandshakePort, method: commands.Connection.TuneOk) -> None:
    config = session.config
    frame_max, channel_max, heartbeat_s = negotiate_tune(
        method.frame_max,
        method.channel_max,
        method.heartbeat,
        config.frame_max,
        config.channel_max,
        config.heartbeat_s,
    )
    session.frame_max = frame_max
    session.channel_max = channel_max
    session.frames.max_frame_size = frame_max
    session.heartbeat.interval_s = heartbeat_s
    session.state = ConnectionState.AWAITING_OPEN


def _update_secret(session: HandshakePort, method: commands.Connection.UpdateSecret) -> None:
    """rabbit_reader handle_method0(#'connection.update_secret'{}) when running: the auth backend's
    ``update_state/2`` decides. The internal backend (ours: users and password hashes) keeps the user as it
    is, so the answer is update-secret-ok whatever the secret (RabbitMQ 3.10 and 3.13 alike, checked
    against the oracle); token backends (OAuth2), which re-validate, are not implemented here."""
    connection_log.secret_updated(session, str(method.reason or ""))
    session.send(0, commands.Connection.UpdateSecretOk())


def _open(session: HandshakePort, method: commands.Connection.Open) -> None:
    vhost = session.broker.vhosts.get(method.virtual_host)
    if vhost is None:
        raise HardError(ReplyCode.NOT_ALLOWED, f"vhost {method.virtual_host} not found", 10, 40)
    limit = session.config.connection_max
    if limit is not None and sum(len(v.connections) for v in session.broker.vhosts.values()) >= limit:
        # rabbit_reader (3.11+): connection_max is checked at connection.open.
        raise HardError(
            ReplyCode.NOT_ALLOWED, f"connection refused: node connection limit ({limit}) is reached", 10, 40
        )
    check_connection_limits(session.broker, vhost, session.username)
    if not session.broker.access.can_access_vhost(session.username, vhost.name):
        # rabbit_access_control:check_vhost_access: no permission entry for the vhost.
        raise HardError(
            ReplyCode.NOT_ALLOWED,
            f"access to vhost '{vhost.name}' refused for user '{session.username}'",
            10,
            40,
        )
    session.opened(vhost)
    connection_log.authenticated(session)
    session.send(0, commands.Connection.OpenOk())
