"""Connections, channels and consumers as RabbitMQ 3.13's management API serialises them (every key; neutral
values for Erlang process statistics WarrenMQ has no equivalent of)."""

from __future__ import annotations

from typing import Any

from broker.management.stats import live
from broker.management.views.serialize import RATE


def _endpoint_keys(protocol: Any, node: str) -> dict[str, Any]:
    """The keys a connection's row has whichever AMQP version it speaks: where its socket is, the node, and
    TLS (no client certificates or cipher details are reported)."""
    (peer_host, peer_port), (host, port) = live.sockets(protocol)
    tls = protocol.transport is not None and protocol.transport.get_extra_info("sslcontext") is not None
    return {
        "host": host,
        "name": protocol.name,
        "node": node,
        "peer_cert_issuer": None,
        "peer_cert_subject": None,
        "peer_cert_validity": None,
        "peer_host": peer_host,
        "peer_port": peer_port,
        "port": port,
        "ssl": tls,
        "ssl_cipher": None,
        "ssl_hash": None,
        "ssl_key_exchange": None,
        "ssl_protocol": None,
    }


def connection_json(protocol: Any, node: str) -> dict[str, Any]:
    session = protocol.session
    properties = dict(session.client_properties)
    row = {
        "auth_mechanism": session.mechanism,
        "channel_max": session.channel_max,
        "channels": len(session.channels),
        "client_properties": properties,
        "connected_at": int(getattr(protocol, "connected_at_ms", 0)),
        "frame_max": session.frame_max,
        "garbage_collection": {},
        "protocol": "AMQP 0-9-1",
        "recv_cnt": 0,
        "recv_oct": 0,
        "recv_oct_details": dict(RATE),
        "reductions": 0,
        "reductions_details": dict(RATE),
        "send_cnt": 0,
        "send_oct": 0,
        "send_oct_details": dict(RATE),
        "send_pend": 0,
        "state": live.connection_state(protocol),
        "timeout": session.heartbeat.interval_s,
        "type": "network",
        "user": session.username,
        "user_provided_name": properties.get("connection_name"),
        "user_who_performed_action": session.username,
        "vhost": live.connection_vhost(protocol),
    }
    return dict(sorted({**row, **_endpoint_keys(protocol, node)}.items()))


def amqp10_connection_json(protocol: Any, node: str) -> dict[str, Any]:
    """An AMQP 1.0 connection with the keys RabbitMQ 4.0.5 lists for one (checked against it): protocol
    "AMQP 1-0", no per-connection statistics, the negotiated limits."""
    connection = protocol.connection
    row = {
        "auth_mechanism": connection.mechanism,
        "channel_max": connection.channel_max,
        "client_properties": {},
        "connected_at": int(protocol.connected_at_ms),
        "frame_max": connection.frame_max,
        "protocol": "AMQP 1-0",
        "timeout": connection.config.heartbeat_s,
        "type": "network",
        "user": connection.username,
        "vhost": connection.vhost.name if connection.vhost is not None else "",
    }
    return dict(sorted({**row, **_endpoint_keys(protocol, node)}.items()))


def amqp10_consumer_json(link: Any, consumer_timeout_ms: int) -> dict[str, Any]:
    """An AMQP 1.0 receiver link as RabbitMQ 4.0.5 lists its consumer (checked against it): the link's
    handle as the tag, no channel."""
    consumer = link.consumer
    return {
        "ack_required": not consumer.no_ack,
        "active": True,
        "activity_status": "up",
        "arguments": {},
        "channel_details": [],  # an empty proplist, as RabbitMQ's JSON encoder writes it
        "consumer_tag": str(int(link.handle)),
        "consumer_timeout": consumer_timeout_ms,
        "exclusive": False,
        "prefetch_count": 0,
        "queue": {"name": consumer.queue.name, "vhost": consumer.queue.vhost},
    }


def owner_details(protocol: Any) -> dict[str, Any]:
    """A connection as RabbitMQ names it inside other objects (a channel's connection_details, an exclusive
    queue's owner_pid_details)."""
    (peer_host, peer_port), _ = live.sockets(protocol)
    return {"name": protocol.name, "peer_host": peer_host, "peer_port": peer_port}


def channel_json(protocol: Any, number: int, channel: Any, node: str) -> dict[str, Any]:
    user = live.connection_user(protocol)
    return {
        "acks_uncommitted": 0,
        "confirm": bool(channel.confirm),
        "connection_details": owner_details(protocol),
        "consumer_count": len(channel.consumers),
        "garbage_collection": {},
        "global_prefetch_count": channel.global_prefetch,
        "idle_since": None,
        "messages_unacknowledged": live.channel_unacked(channel),
        "messages_uncommitted": 0,
        "messages_unconfirmed": 0,
        "name": live.channel_name(protocol, number),
        "node": node,
        "number": number,
        "pending_raft_commands": 0,
        "prefetch_count": channel.prefetch_count,
        "reductions": 0,
        "reductions_details": dict(RATE),
        "state": "running",
        "transactional": channel.tx is not None,
        "user": user,
        "user_who_performed_action": user,
        "vhost": live.connection_vhost(protocol),
    }


def consumer_json(protocol: Any, number: int, consumer: Any, node: str) -> dict[str, Any]:
    (peer_host, peer_port), _ = live.sockets(protocol)
    return {
        "ack_required": not consumer.no_ack,
        "active": True,
        "activity_status": "up",
        "arguments": dict(consumer.arguments),
        "channel_details": {
            "connection_name": protocol.name,
            "name": live.channel_name(protocol, number),
            "node": node,
            "number": number,
            "peer_host": peer_host,
            "peer_port": peer_port,
            "user": live.connection_user(protocol),
        },
        "consumer_tag": consumer.consumer_tag,
        "exclusive": consumer.exclusive,
        "prefetch_count": consumer.prefetch_count,
        "queue": {"name": consumer.queue.name, "vhost": consumer.queue.vhost},
    }
