"""Connection class (channel 0): start, secure, tune, open and close, as rabbit_reader.erl drives the
handshake.
"""

from __future__ import annotations

import ipaddress
from typing import TYPE_CHECKING, Any

import structlog
from pamqp import commands
from pamqp.base import Frame

from protocol.codec import encode_heartbeat
from protocol.connection import (
    LOCALES,
    MECHANISMS,
    ConnectionState,
    access_refused_login,
    check_connection_method,
    negotiate_tune,
    parse_sasl_response,
    server_properties,
)
from protocol.errors import HardError, ReplyCode

if TYPE_CHECKING:
    from broker.session.ports import HandshakePort

HEARTBEAT = encode_heartbeat()
log = structlog.get_logger("warrenmq.session")


def send_start(session: HandshakePort) -> None:
    session.state = ConnectionState.AWAITING_START_OK
    session.send(
        0,
        commands.Connection.Start(
            version_major=0,
            version_minor=9,
            server_properties=server_properties(
                session.config.product, session.config.product_version, session.config.cluster_name
            ),
            mechanisms=MECHANISMS.decode(),
            locales=LOCALES.decode(),
        ),
    )


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
    else:
        raise HardError(ReplyCode.COMMAND_INVALID, f"unimplemented method {method.name}")


def _start_ok(session: HandshakePort, method: commands.Connection.StartOk) -> None:
    properties: dict[str, Any] = dict(method.client_properties or {})
    session.client_properties = properties
    capabilities = properties.get("capabilities") or {}
    session.consumer_cancel_notify = bool(capabilities.get("consumer_cancel_notify", False))
    mechanism = method.mechanism or ""
    response = method.response if isinstance(method.response, bytes) else str(method.response or "").encode()
    username, password = parse_sasl_response(mechanism, response)
    session.mechanism = mechanism
    if not session.broker.authenticate(username, password):
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
    log.error("login_refused", peer=session.peer, reason=f"{session.mechanism} login refused: {reason}")
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


def _open(session: HandshakePort, method: commands.Connection.Open) -> None:
    vhost = session.broker.vhosts.get(method.virtual_host)
    if vhost is None:
        raise HardError(ReplyCode.NOT_ALLOWED, f"vhost {method.virtual_host} not found", 10, 40)
    if not session.broker.access.can_access_vhost(session.username, vhost.name):
        # rabbit_access_control:check_vhost_access: no permission entry for the vhost.
        raise HardError(
            ReplyCode.NOT_ALLOWED,
            f"access to vhost '{vhost.name}' refused for user '{session.username}'",
            10,
            40,
        )
    session.opened(vhost)
    session.send(0, commands.Connection.OpenOk())
