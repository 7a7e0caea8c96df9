"""Exchange class: declare, delete, bind, unbind (exchange-to-exchange)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pamqp import commands

if TYPE_CHECKING:
    from broker.core.vhost import VirtualHost
    from broker.session.ports import ChannelPort


def _vhost(channel: ChannelPort) -> VirtualHost:
    vhost = channel.conn.vhost
    assert vhost is not None
    return vhost


def declare(channel: ChannelPort, method: commands.Exchange.Declare) -> None:
    _vhost(channel).declare_exchange(
        method.exchange,
        method.exchange_type,
        passive=method.passive,
        durable=method.durable,
        auto_delete=method.auto_delete,
        internal=method.internal,
        arguments=method.arguments,
    )
    if not method.nowait:
        channel.conn.send(channel.channel_id, commands.Exchange.DeclareOk())


def delete(channel: ChannelPort, method: commands.Exchange.Delete) -> None:
    _vhost(channel).delete_exchange(method.exchange, if_unused=method.if_unused)
    if not method.nowait:
        channel.conn.send(channel.channel_id, commands.Exchange.DeleteOk())


def bind(channel: ChannelPort, method: commands.Exchange.Bind) -> None:
    _vhost(channel).bind_exchange(method.destination, method.source, method.routing_key, method.arguments)
    if not method.nowait:
        channel.conn.send(channel.channel_id, commands.Exchange.BindOk())


def unbind(channel: ChannelPort, method: commands.Exchange.Unbind) -> None:
    _vhost(channel).unbind_exchange(method.destination, method.source, method.routing_key, method.arguments)
    if not method.nowait:
        channel.conn.send(channel.channel_id, commands.Exchange.UnbindOk())
