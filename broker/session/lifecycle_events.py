"""Connection, channel and login notices as rabbit_reader and rabbit_channel send them to rabbit_event
(connection.created/closed, channel.created/closed, user.authentication.success/failure), for the event
exchange. Nothing is built unless something listens (``EventBus.notices``).

Field names and values are RabbitMQ 3.10's: addresses as Erlang prints IP tuples ("{127,0,0,1}"), the
protocol as "{0,9,1}", and pids where RabbitMQ has processes (connections and channels get unique ones here).
"""

from __future__ import annotations

import ipaddress
import itertools
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from broker.core.broker import Broker

PROTOCOL = "{0,9,1}"
_serials = itertools.count(1)


# NamedTuples, not dataclasses: start-up cost.
class Endpoint(NamedTuple):
    """The connection's socket as the edge saw it when it was accepted."""

    peer_host: str = ""
    peer_port: int = 0
    host: str = ""
    port: int = 0
    ssl: bool = False
    connected_at_ms: int = 0

    @property
    def name(self) -> str:
        """RabbitMQ's connection name: "client-ip:port -> server-ip:port"."""
        return f"{self.peer_host}:{self.peer_port} -> {self.host}:{self.port}"


def new_pid() -> str:
    """A process id in Erlang's shape, unique in this broker (a connection's, a channel's)."""
    return f"<warrenmq.{next(_serials)}.0>"


def erlang_ip(host: str) -> str:
    """An address as Erlang prints its inet tuple: "{127,0,0,1}"; IPv6 as eight 16-bit integers."""
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return host
    if isinstance(address, ipaddress.IPv4Address):
        return "{" + ",".join(str(part) for part in address.packed) + "}"
    packed = address.packed
    return "{" + ",".join(str(int.from_bytes(packed[i : i + 2], "big")) for i in range(0, 16, 2)) + "}"


def _peer(endpoint: Endpoint) -> dict[str, Any]:
    return {
        "peer_host": erlang_ip(endpoint.peer_host),
        "peer_port": endpoint.peer_port,
        "host": erlang_ip(endpoint.host),
        "ssl": endpoint.ssl,
    }


def login(broker: Broker, endpoint: Endpoint, user: str, mechanism: str, error: str | None) -> None:
    """rabbit_reader's auth_succeeded / auth_fail notice (no acting user; the error as Erlang's charlist)."""
    fields: dict[str, Any] = {
        "name": user,
        "auth_mechanism": mechanism,
        "protocol": PROTOCOL,
        "connection_name": endpoint.name,
        "connection_type": "network",
        **_peer(endpoint),
    }
    if error is None:
        broker.events.notify("user.authentication.success", fields, named=False)
    else:
        fields["error"] = [ord(char) for char in error]
        broker.events.notify("user.authentication.failure", fields, named=False)


class Opened(NamedTuple):
    """What connection.created reports of a connection that completed connection.open."""

    endpoint: Endpoint
    pid: str
    user: str
    vhost: str
    mechanism: str
    client_properties: dict[str, Any]
    channel_max: int
    frame_max: int
    heartbeat_s: int


def connection_created(broker: Broker, opened: Opened) -> None:
    endpoint = opened.endpoint
    ssl_fields = ("ssl_hash", "ssl_cipher", "ssl_key_exchange", "ssl_protocol")
    cert_fields = ("peer_cert_validity", "peer_cert_issuer", "peer_cert_subject")
    fields: dict[str, Any] = {
        "pid": opened.pid,
        "name": endpoint.name,
        "type": "network",
        "port": endpoint.port,
        **_peer(endpoint),
        **dict.fromkeys(cert_fields, ""),
        "auth_mechanism": opened.mechanism,
        **dict.fromkeys(ssl_fields, ""),
        "protocol": PROTOCOL,
        "user": opened.user,
        "vhost": opened.vhost,
        "timeout": opened.heartbeat_s,
        "frame_max": opened.frame_max,
        "channel_max": opened.channel_max,
        "client_properties": opened.client_properties,
        "connected_at": endpoint.connected_at_ms,
    }
    broker.events.notify("connection.created", fields, actor=opened.user)


def connection_closed(
    broker: Broker, endpoint: Endpoint, pid: str, client_properties: dict[str, Any]
) -> None:
    fields = {"name": endpoint.name, "pid": pid, "client_properties": client_properties}
    broker.events.notify("connection.closed", fields, named=False)


def channel_created(
    broker: Broker, endpoint: Endpoint, connection_pid: str, pid: str, number: int, user: str, vhost: str
) -> None:
    fields = {
        "pid": pid,
        "name": f"{endpoint.name} ({number})",
        "connection": connection_pid,
        "number": number,
        "user": user,
        "vhost": vhost,
    }
    broker.events.notify("channel.created", fields, actor=user)


def channel_closed(broker: Broker, pid: str, user: str) -> None:
    """A channel that was announced (it has a pid) is gone."""
    if pid and broker.events.notices:
        broker.events.notify("channel.closed", {"pid": pid}, actor=user)
