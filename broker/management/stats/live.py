"""Read-only views of open AMQP connections, channels and consumers for the API. The session layer's attribute
names are read here only, so a change there is a change in this one module."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from protocol.connection import ConnectionState

if TYPE_CHECKING:
    from broker.server.server import Server


def open_connections(server: Server) -> list[Any]:
    """Protocols whose session completed connection.open, oldest first by name."""
    opened = [
        protocol
        for protocol in server.connections
        if protocol.session is not None and protocol.session.state is ConnectionState.OPEN
    ]
    return sorted(opened, key=lambda protocol: str(protocol.name))


def open_amqp10_connections(server: Server) -> list[Any]:
    """AMQP 1.0 connections past their open (broker.server.amqp10_protocol), oldest first by name."""
    opened = [
        protocol
        for protocol in server.amqp10_connections
        if protocol.connection.vhost is not None and not protocol.connection.closed
    ]
    return sorted(opened, key=lambda protocol: str(protocol.name))


def amqp10_receivers(protocol: Any) -> list[Any]:
    """The receiver links (our consumers) of an AMQP 1.0 connection, by session and handle."""
    connection = protocol.connection
    return [
        link
        for _, session in sorted(connection.sessions.items())
        for _, link in sorted(session.links.items())
        if getattr(link, "consumer", None) is not None
    ]


def amqp10_senders(protocol: Any) -> list[Any]:
    """The sender links (our publishers) of an AMQP 1.0 connection: the links that are not receivers."""
    connection = protocol.connection
    return [
        link
        for session in connection.sessions.values()
        for link in session.links.values()
        if getattr(link, "consumer", None) is None
    ]


def connection_state(protocol: Any) -> str:
    """rabbit_reader's state as the API shows it: "blocked" while a resource alarm holds the connection,
    "flow" while its publishing credit is exhausted, else "running"."""
    throttle = getattr(protocol, "throttle", None)
    if throttle is not None and throttle.blocked:
        return "blocked"
    if getattr(protocol, "in_flow", False):
        return "flow"
    return "running"


def connection_vhost(protocol: Any) -> str:
    vhost = protocol.session.vhost
    return str(vhost.name) if vhost is not None else ""


def connection_user(protocol: Any) -> str:
    return str(protocol.session.username)


def sockets(protocol: Any) -> tuple[tuple[str, int], tuple[str, int]]:
    """(peer, local) addresses of the connection's socket."""
    transport = protocol.transport
    peer = transport.get_extra_info("peername") if transport is not None else None
    local = transport.get_extra_info("sockname") if transport is not None else None
    return _pair(peer), _pair(local)


def _pair(address: Any) -> tuple[str, int]:
    return (str(address[0]), int(address[1])) if isinstance(address, tuple) else ("", 0)


def channels(protocol: Any) -> list[tuple[int, Any]]:
    return sorted(protocol.session.channels.items())


def channel_name(protocol: Any, number: int) -> str:
    # RabbitMQ: "<connection name> (<channel number>)".
    return f"{protocol.name} ({number})"


def channel_consumers(channel: Any) -> list[Any]:
    return list(channel.consumers.values())


def channel_unacked(channel: Any) -> int:
    unacked = channel.unacked
    return len(unacked) if hasattr(unacked, "__len__") else 0


def force_close(protocol: Any, reason: str) -> None:
    """An operator's close (DELETE /api/connections/NAME, rabbitmqctl close_connection): logged as
    rabbit_networking:close_connection/2 logs it, then closed with 320 and the reason."""
    from broker.session.connection_log import closing_connection  # only when an operator closes one

    closing_connection(protocol.session, reason)
    protocol.session.force_close(reason)
