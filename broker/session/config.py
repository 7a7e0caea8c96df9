"""The limits a connection session negotiates and enforces: one frozen value shared by all sessions."""

from __future__ import annotations

from typing import NamedTuple

from broker.core.topology.vhost import LAGGING_BACKLOG

# RabbitMQ 3.13 defaults (rabbit.app / deps/rabbit/Makefile).
DEFAULT_FRAME_MAX = 131072
DEFAULT_CHANNEL_MAX = 2047
# AMQP 1.0 sessions a connection may have at once (RabbitMQ 4.0: channels 0..63).
DEFAULT_SESSION_MAX_PER_CONNECTION = 64
DEFAULT_HEARTBEAT_S = 60
DEFAULT_MAX_MESSAGE_SIZE = 128 * 1024 * 1024
PRE_AUTH_FRAME_MAX = 4096
HANDSHAKE_TIMEOUT_S = 10.0
DEFAULT_CONSUMER_TIMEOUT_MS = 30 * 60 * 1000
# Publisher flow control, after RabbitMQ's credit_flow (credit_flow_default_credit = {400, 200}): each message
# a connection routes into a queue whose consumers lag (more than FLOW_QUEUE_BACKLOG ready messages while it
# has consumers) costs one credit; with none left the edge stops reading it for a moment (state "flow"), then
# grants FLOW_MORE_CREDIT. A queue without consumers costs nothing: its backlog is the memory alarm's concern.
FLOW_INITIAL_CREDIT = 400
FLOW_MORE_CREDIT = 200
FLOW_QUEUE_BACKLOG = LAGGING_BACKLOG


# A NamedTuple, not a dataclass: start-up cost; a changed copy is ``config._replace(...)``.
class SessionConfig(NamedTuple):
    frame_max: int = DEFAULT_FRAME_MAX
    channel_max: int = DEFAULT_CHANNEL_MAX
    heartbeat_s: int = DEFAULT_HEARTBEAT_S
    max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE
    pre_auth_frame_max: int = PRE_AUTH_FRAME_MAX
    handshake_timeout_s: float = HANDSHAKE_TIMEOUT_S
    # consumer_timeout (rabbit.app): a delivery unacknowledged this long closes its channel; 0 = off.
    consumer_timeout_ms: int = DEFAULT_CONSUMER_TIMEOUT_MS
    # Seconds to wait for the peer's close-ok after the broker sent connection.close.
    close_timeout_s: float = 3.0
    # connection.start server-properties: the RabbitMQ release the profile emulates, or WarrenMQ itself
    # (--report-as warrenmq); clients read product and version to pick behaviour.
    product: str = "RabbitMQ"
    product_version: str = "3.13.7"
    cluster_name: str = "rabbit@localhost"
    # The node's name (RABBITMQ_NODENAME): direct reply-to names carry its erlang:phash2.
    node_name: str = "rabbit@localhost"
    # connection_max / consumer_max_per_channel (rabbitmq.conf); None = infinity, RabbitMQ's default.
    connection_max: int | None = None
    consumer_max_per_channel: int | None = None
    # auth_mechanisms.*: what connection.start offers (EXTERNAL only to a TLS peer with a certificate).
    auth_mechanisms: tuple[str, ...] = ("PLAIN", "AMQPLAIN")
    # Whether rabbitmq.conf lists auth_mechanisms.*: AMQP 1.0 then offers that list as RabbitMQ 4 does, else
    # 4.0's default (broker.session.amqp10.sasl).
    auth_mechanisms_configured: bool = False
    # loopback_users (rabbit.app: [<<"guest">>]): users who may log in only from a loopback address.
    loopback_users: tuple[str, ...] = ("guest",)
    # session_max_per_connection (rabbitmq.conf, AMQP 1.0 only): the open's channel-max is one less.
    session_max_per_connection: int = DEFAULT_SESSION_MAX_PER_CONNECTION
