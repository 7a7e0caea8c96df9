"""The detail of RabbitMQ's 403 ACCESS_REFUSED texts, as each release words them
(rabbit_access_control:check_resource_access and check_topic_access). RabbitMQ 3.10.8 says "access to queue
'q' in vhost '/' refused for user 'u'"; 4.0.5 names the permission first, "configure access to queue 'q'
...", "write access to topic 'k' in exchange 'x' ..." (checked on both)."""

from __future__ import annotations

# rabbit_channel names the default exchange "amq.default" when it checks access to it.
DEFAULT_EXCHANGE_NAME = "amq.default"


def refusal(
    user: str,
    vhost: str,
    resource_kind: str,
    name: str,
    permission: str,
    permission_first: bool = False,
) -> str:
    """A refused resource; ``permission_first`` as 4.x words it."""
    shown = DEFAULT_EXCHANGE_NAME if resource_kind == "exchange" and name == "" else name
    prefix = f"{permission} " if permission_first else ""
    return f"{prefix}access to {resource_kind} '{shown}' in vhost '{vhost}' refused for user '{user}'"


def topic_refusal(
    user: str,
    vhost: str,
    exchange: str,
    routing_key: str,
    permission: str,
    permission_first: bool = False,
) -> str:
    """A refused routing key on a topic exchange; ``permission_first`` as 4.x words it."""
    prefix = f"{permission} " if permission_first else ""
    return (
        f"{prefix}access to topic '{routing_key}' in exchange '{exchange}' in vhost '{vhost}' "
        f"refused for user '{user}'"
    )
