"""basic.publish's checks of the exchange and of the message properties, in rabbit_channel's order: write
permission, the exchange's existence, its internal flag, topic permission (broker.session.access_checks), then
the properties: direct reply-to, user_id, expiration, CC/BCC. So a message with a bad property sent to a
missing exchange is refused with the 404, and in a transaction the exchange is checked at publish time, not at
tx.commit (both checked against RabbitMQ 3.10.8).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from broker.core.model.expiration import parse_expiration
from broker.session import direct_reply
from broker.session.routing_headers import check_routing_headers
from protocol.errors import ChannelError, ReplyCode, internal_exchange, no_exchange

if TYPE_CHECKING:
    from broker.session.ports import ChannelPort
    from protocol.content_header import HeaderInfo


def check_exchange(channel: ChannelPort, exchange_name: str) -> None:
    """rabbit_exchange:lookup_or_die then check_internal_exchange: 404, then 403."""
    vhost = channel.conn.vhost
    assert vhost is not None
    exchange = vhost.exchanges.get(exchange_name)
    if exchange is None:
        raise no_exchange(exchange_name, vhost.name)
    if exchange.internal:
        raise internal_exchange(exchange_name, vhost.name)


def checked_properties(
    channel: ChannelPort, exchange_name: str, info: HeaderInfo, header_payload: bytes
) -> tuple[bytes, int | None]:
    """(the header payload to keep, with a direct reply-to name stamped in; the per-message TTL in ms) of a
    message with properties the broker checks. Called only when one of them is set."""
    try:
        if info.reply_to is not None and info.reply_to == direct_reply.REPLY_QUEUE:
            header_payload = direct_reply.stamp_reply_to(channel, header_payload)
        username = channel.conn.username
        if info.user_id is not None and info.user_id != username:
            raise ChannelError(
                ReplyCode.PRECONDITION_FAILED,
                f"user_id property set to '{info.user_id}' but authenticated user was '{username}'",
            )
        ttl = None if info.expiration is None else parse_expiration(info.expiration)
        headers = info.headers
        if headers is not None and ("CC" in headers or "BCC" in headers):
            assert channel.conn.vhost is not None
            check_routing_headers(channel.conn.vhost, exchange_name, headers)
    except ChannelError:
        check_exchange(channel, exchange_name)  # the exchange is refused before any property
        raise
    return header_payload, ttl
