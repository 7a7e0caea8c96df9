"""The CC and BCC headers' type check on publish (rabbit_basic:header_routes, called by rabbit_channel)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from broker.core.model.arguments import amqp_type_name
from protocol.errors import ChannelError, ReplyCode

if TYPE_CHECKING:
    from broker.core.topology.vhost import VirtualHost

ROUTING_HEADERS = ("CC", "BCC")  # checked in this order


def check_routing_headers(vhost: VirtualHost, exchange: str, headers: Mapping[str, Any]) -> None:
    """A CC or BCC header must be an array: RabbitMQ refuses any other type with 406 ``invalid message:
    {unacceptable_type_in_header,"BCC",longstr}`` (3.10.8 and 3.13), after its exchange checks, so a
    missing exchange still answers 404 first."""
    for name in ROUTING_HEADERS:
        if name in headers and not isinstance(headers[name], list):
            vhost.exchange(exchange)  # 404 first, as rabbit_channel looks the exchange up before
            raise ChannelError(
                ReplyCode.PRECONDITION_FAILED,
                f'invalid message: {{unacceptable_type_in_header,"{name}",{amqp_type_name(headers[name])}}}',
                60,
                40,
            )
