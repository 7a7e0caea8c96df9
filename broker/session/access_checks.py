"""`authorize()` on AMQP methods, as rabbit_channel calls check_*_permitted (RabbitMQ's access-control
table): each check asks the channel's `DecisionCache` and refuses with a 403 channel error in RabbitMQ's
words. What is checked where, and in which order against the other checks, is the handlers' business.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from broker.core.access.refusals import refusal, topic_refusal
from protocol.errors import ChannelError, ReplyCode

if TYPE_CHECKING:
    from broker.core.access.access import Permission, ResourceKind
    from broker.core.exchanges.exchange import Exchange
    from broker.session.ports import ChannelPort


def check(channel: ChannelPort, resource_kind: ResourceKind, name: str, permission: Permission) -> None:
    """check_configure_permitted / check_write_permitted / check_read_permitted."""
    access = channel.access
    if not access.allowed(resource_kind, name, permission):
        raise ChannelError(
            ReplyCode.ACCESS_REFUSED,
            refusal(
                access.user,
                access.vhost,
                resource_kind,
                name,
                permission,
                access.control.permission_first_in_refusals,
            ),
        )


def check_topic(
    channel: ChannelPort, exchange: Exchange | None, routing_key: str, permission: Literal["write", "read"]
) -> None:
    """check_write_permitted_on_topic / check_read_permitted_on_topic: only topic exchanges, and only when
    the user has a topic permission for the exchange (rabbit_auth_backend_internal)."""
    if exchange is None or exchange.type_name != "topic":
        return
    access = channel.access
    if not access.topic_allowed(exchange.name, routing_key, permission):
        raise ChannelError(
            ReplyCode.ACCESS_REFUSED,
            topic_refusal(
                access.user,
                access.vhost,
                exchange.name,
                routing_key,
                permission,
                access.control.permission_first_in_refusals,
            ),
        )


def check_publish(channel: ChannelPort, exchange_name: str, routing_key: str) -> None:
    """basic.publish: write on the exchange; then, for an existing, non-internal topic exchange (a missing or
    internal one fails in the router with 404 / 403 first), the routing key against topic permissions."""
    access = channel.access
    if not access.allowed("exchange", exchange_name, "write"):
        raise ChannelError(
            ReplyCode.ACCESS_REFUSED,
            refusal(
                access.user,
                access.vhost,
                "exchange",
                exchange_name,
                "write",
                access.control.permission_first_in_refusals,
            ),
            60,
            40,
        )
    if not access.topic_governed(exchange_name):
        access.publishable[exchange_name] = access.control.version
        return
    vhost = channel.conn.vhost
    exchange = vhost.exchanges.get(exchange_name) if vhost is not None else None
    if exchange is None or exchange.internal:
        return
    try:
        check_topic(channel, exchange, routing_key, "write")
    except ChannelError as error:
        error.class_id, error.method_id = 60, 40
        raise
