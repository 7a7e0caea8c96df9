"""The open a RabbitMQ 4.0.5 node answers an AMQP 1.0 client with (checked against it), and the vhost the
client's open names."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Final

from protocol.amqp10.performatives import Open
from protocol.amqp10.types import Symbol, UInt, UShort

if TYPE_CHECKING:
    from broker.session.config import SessionConfig

# RabbitMQ 4.0's limits as its open announces them: channel-max session_max_per_connection - 1 (part 2,
# 2.7.1: channel-max plus one sessions; 64 by default, so channels 0..63), the frame_max of the node,
# idle-time-out half the heartbeat in milliseconds.
_OFFERED_CAPABILITIES: Final = (Symbol("LINK_PAIR_V1_0"), Symbol("ANONYMOUS-RELAY"))
_COPYRIGHT: Final = "Copyright (c) 2007-2024 Broadcom Inc and/or its subsidiaries"
_INFORMATION: Final = "Licensed under the MPL 2.0. Website: https://rabbitmq.com"
_PLATFORM: Final = f"Python {sys.version_info.major}.{sys.version_info.minor}.{sys.version_info.micro}"


def our_open(config: SessionConfig, version: str) -> Open:
    return Open(
        container_id=config.cluster_name,
        max_frame_size=UInt(config.frame_max),
        channel_max=UShort(channel_max(config)),
        idle_time_out=UInt(config.heartbeat_s * 1000 // 2),
        offered_capabilities=_OFFERED_CAPABILITIES,
        properties={
            Symbol("node"): config.node_name,
            Symbol("cluster_name"): config.cluster_name,
            Symbol("copyright"): _COPYRIGHT,
            Symbol("information"): _INFORMATION,
            # 4.0.5 names its Erlang/OTP release here; we name the runtime, as connection.start's does.
            Symbol("platform"): _PLATFORM,
            Symbol("product"): config.product,
            Symbol("version"): version,
        },
    )


def channel_max(config: SessionConfig) -> int:
    """The highest channel a session may begin on (before the client's own channel-max)."""
    return config.session_max_per_connection - 1


def vhost_name(hostname: str | None) -> str:
    """RabbitMQ 4 reads the vhost from open's hostname, "vhost:<name>"; any other hostname means "/"."""
    if hostname is not None and hostname.startswith("vhost:"):
        return hostname[len("vhost:") :]
    return "/"
